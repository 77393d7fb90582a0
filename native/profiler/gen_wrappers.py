#!/usr/bin/env python3
"""Generate libfabricbench-prof's MPI wrappers from mpi_calls.tbl.

usage: gen_wrappers.py TABLE OUT_DIR

Writes OUT_DIR/fb_calls.h (call ids and names) and OUT_DIR/fb_wrappers.c: for every
call a C wrapper (MPI_X -> PMPI_X) and the Fortran wrapper families from the same
line: mpif.h / ``use mpi`` (mpi_x_, mpi_x__, mpi_x, MPI_X -> pmpi_x_) and ``use mpi_f08``
as Open MPI names it (mpi_x_f08_ -> pmpi_x_f08_) and as MPICH 4 does (mpi_x_f08_ ->
pmpir_x_f08_, and for calls with a choice buffer mpi_x_f08ts_ -> pmpir_x_f08ts_). A wrapper
times the PMPI call, notes its caller's return address (the call site) and hands the
arguments that play a role to the template of its KIND (fb_rec_KIND in fbprof.h).

A line starting with ``?MACRO`` is compiled only where mpi.h / mpi-ext.h define MACRO
(an MPI's extension, such as Open MPI's MPIX_ persistent collectives) and gets a C
wrapper only.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

# The roles each KIND's template takes, in order. "role<" is read before the PMPI call
# (the call may overwrite it); "role=VALUE" is passed as VALUE when the call has no such
# argument.
KINDS: Dict[str, List[str]] = {
    "plain": [],
    "send": ["count", "type", "peer", "comm"],
    "recv": ["count", "type"],
    "psend": ["count", "type", "peer", "comm", "req"],
    "precv": ["count", "type", "req"],
    "start": ["req<"],
    "startall": ["n", "reqs"],
    "reqfree": ["req<"],
    "bcast": ["count", "type", "root", "comm"],
    "reduce": ["count", "type", "root", "comm"],
    "reduction": ["count", "type"],
    "io": ["count", "type"],
    "redscat": ["rcounts", "type", "comm"],
    "gather": ["sbuf", "scount", "stype", "rcount", "rtype", "root", "comm"],
    "gatherv": ["sbuf", "scount", "stype", "rcounts", "rtype", "root", "comm"],
    "scatter": ["scount", "stype", "rbuf", "rcount", "rtype", "root", "comm"],
    "scatterv": ["scounts", "stype", "rbuf", "rcount", "rtype", "root", "comm"],
    "allgather": ["sbuf", "scount", "stype", "rcount", "rtype", "comm"],
    "allgatherv": ["sbuf", "scount", "stype", "rcounts", "rtype", "comm"],
    "alltoall": ["sbuf", "scount", "stype", "rcount", "rtype", "comm"],
    "alltoallv": ["sbuf", "scounts", "stype", "rcounts", "rtype", "comm"],
    "alltoallw": ["sbuf", "scounts", "stypes", "rcounts", "rtypes", "comm"],
    "nbr": ["scount", "stype", "comm"],
    "nbrv": ["scounts", "stype", "comm"],
    "nbrw": ["scounts", "stypes", "comm"],
    "put": ["count=1", "type", "peer", "win"],
    "get": ["count=1", "type", "peer", "win"],
    "winnew": ["comm", "newwin"],
    "commnew": ["newcomm"],
    "typefree": [],
}
SPECIAL_KINDS = {"init", "finalize", "pcontrol"}

INT_ROLES = {"count", "peer", "root", "n", "scount", "rcount", "level"}
HANDLE_F2C = {
    "type": "PMPI_Type_f2c", "stype": "PMPI_Type_f2c", "rtype": "PMPI_Type_f2c",
    "comm": "PMPI_Comm_f2c", "newcomm": "PMPI_Comm_f2c",
    "win": "PMPI_Win_f2c", "newwin": "PMPI_Win_f2c",
    "req": "PMPI_Request_f2c",
}
C_TYPE = {
    "type": "MPI_Datatype", "stype": "MPI_Datatype", "rtype": "MPI_Datatype",
    "comm": "MPI_Comm", "newcomm": "MPI_Comm", "win": "MPI_Win", "newwin": "MPI_Win",
    "req": "MPI_Request", "scounts": "const int *", "rcounts": "const int *",
    "stypes": "const void *", "rtypes": "const void *", "reqs": "const void *",
    "sbuf": "const void *", "rbuf": "const void *",
}
C_TYPE.update({r: "int" for r in INT_ROLES})
OUT_POINTER_ROLES = {"req", "newcomm", "newwin"}  # C argument is a pointer to the handle
ARRAY_ROLES = {"scounts", "rcounts"}
OPAQUE_ROLES = {"stypes", "rtypes", "reqs", "sbuf", "rbuf"}
DOC_ROLES = {"tag", "src", "conly", "str"}  # str: a CHARACTER argument in Fortran
ALL_ROLES = INT_ROLES | set(HANDLE_F2C) | ARRAY_ROLES | OPAQUE_ROLES | DOC_ROLES
# void * arguments that are not choice buffers in mpi_f08 (MPI_Win_allocate's TYPE(C_PTR) baseptr):
# a call with a choice buffer is MPICH's mpi_x_f08ts_ (TS 29113 descriptors), any other mpi_x_f08_.
NOT_CHOICE = {"baseptr"}


class TableError(ValueError):
    pass


@dataclass
class Arg:
    decl: str  # C declaration without the role
    name: str
    role: Optional[str]


@dataclass
class Call:
    kind: str
    name: str
    args: List[Arg]
    varargs: bool
    lineno: int
    guard: Optional[str] = None  # compiled only if this macro is defined
    by_role: Dict[str, Arg] = field(default_factory=dict)

    @property
    def ident(self) -> str:
        return f"FB_ID_{self.name}"

    @property
    def lower(self) -> str:
        return self.name.lower()

    @property
    def fortran_args(self) -> List[Arg]:
        return [a for a in self.args if a.role != "conly"]

    @property
    def has_choice_buffer(self) -> bool:
        return any(re.search(r"\bvoid\s*\*", a.decl) and a.name not in NOT_CHOICE for a in self.args)


LINE = re.compile(r"^(?:\?(?P<guard>\w+)\s+)?(?P<kind>\w+)\s+(?P<name>MPIX?_\w+)\s*\((?P<args>.*)\)\s*$")
ARG = re.compile(r"^(?P<decl>.*?\b(?P<name>\w+)\s*(?:\[\s*\])?)\s*(?:@(?P<role>\w+))?$")


def parse_table(path: Path) -> List[Call]:
    calls: List[Call] = []
    seen = set()
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        m = LINE.match(text)
        if not m:
            raise TableError(f"{path}:{lineno}: expected 'KIND MPI_Name(args)', got {raw!r}")
        kind, name = m["kind"], m["name"]
        if kind not in KINDS and kind not in SPECIAL_KINDS:
            raise TableError(f"{path}:{lineno}: unknown kind {kind!r}")
        if name in seen:
            raise TableError(f"{path}:{lineno}: {name} listed twice")
        seen.add(name)
        args: List[Arg] = []
        varargs = False
        parts = [p.strip() for p in m["args"].split(",")]
        if parts == ["void"]:
            parts = []
        for part in parts:
            if part == "...":
                varargs = True
                continue
            a = ARG.match(part)
            if not a:
                raise TableError(f"{path}:{lineno}: cannot read argument {part!r}")
            role = a["role"]
            if role and role not in ALL_ROLES:
                raise TableError(f"{path}:{lineno}: unknown role @{role} on {a['name']}")
            args.append(Arg(a["decl"].strip(), a["name"], role))
        call = Call(kind, name, args, varargs, lineno, m["guard"])
        for arg in args:
            if arg.role and arg.role not in DOC_ROLES:
                if arg.role in call.by_role:
                    raise TableError(f"{path}:{lineno}: role @{arg.role} given twice")
                call.by_role[arg.role] = arg
        for spec in KINDS.get(kind, []):
            role = spec.rstrip("<").split("=")[0]
            if role not in call.by_role and "=" not in spec:
                raise TableError(f"{path}:{lineno}: kind {kind} needs an argument with @{role}")
        calls.append(call)
    return calls


# ------------------------------------------------------------------ expressions

def c_value(arg: Arg) -> str:
    if arg.role in OUT_POINTER_ROLES:
        return f"*{arg.name}"
    if arg.role in OPAQUE_ROLES:
        return f"(const void *){arg.name}"
    return arg.name


def f_value(arg: Arg, descriptors: bool = False) -> str:
    role = arg.role
    if descriptors and role in ("sbuf", "rbuf"):
        return f"fb_desc_base({arg.name})"
    if role in INT_ROLES:
        return f"(int)*{arg.name}"
    if role in HANDLE_F2C:
        return f"{HANDLE_F2C[role]}(*{arg.name})"
    if role in ARRAY_ROLES:
        return f"(const int *){arg.name}"
    return f"(const void *){arg.name}"


def record_plan(call: Call, fortran: bool, descriptors: bool = False):
    """(declarations read before the call, argument expressions for fb_rec_KIND)."""
    before: List[str] = []
    exprs: List[str] = []
    for i, spec in enumerate(KINDS[call.kind]):
        default = None
        if "=" in spec:
            spec, default = spec.split("=", 1)
        pre = spec.endswith("<")
        role = spec.rstrip("<")
        arg = call.by_role.get(role)
        if arg is None:
            exprs.append(default)
            continue
        value = f_value(arg, descriptors) if fortran else c_value(arg)
        if pre:
            before.append(f"    {C_TYPE[role]} fb_a{i} = {value};")
            exprs.append(f"fb_a{i}")
        else:
            exprs.append(value)
    return before, exprs


def c_params(call: Call) -> str:
    params = [a.decl for a in call.args]
    if call.varargs:
        params.append("...")
    return ", ".join(params) if params else "void"


def f_param(arg: Arg) -> str:
    if arg.role in INT_ROLES or arg.role in HANDLE_F2C or arg.role in ARRAY_ROLES:
        return f"MPI_Fint *{arg.name}"
    return f"void *{arg.name}"


# ------------------------------------------------------------------ C wrappers

def forget_sizes(call: Call) -> List[str]:
    """MPI_Type_free: the datatype size cache forgets every handle first, whether or not the
    call is recorded (recording off, nested), since the handle may come back for another type."""
    return ["    fb_type_sizes_forget();"] if call.kind == "typefree" else []


def c_wrapper(call: Call) -> str:
    names = ", ".join(a.name for a in call.args)
    # Exported whatever mpi.h says: Open MPI declares its calls visible, MPICH does not.
    head = f"FB_EXPORT int {call.name}({c_params(call)})\n{{\n"
    if call.kind == "init":
        return (head + "    fb_depth++;\n"
                f"    int fb_rc = P{call.name}({names});\n"
                "    fb_depth--;\n    fb_init();\n    return fb_rc;\n}\n")
    if call.kind == "finalize":
        return head + f"    fb_finalize();\n    return P{call.name}({names});\n}}\n"
    if call.kind == "pcontrol":
        level = call.by_role["level"].name
        return head + f"    fb_pcontrol({level});\n    return MPI_SUCCESS;\n}}\n"
    before, exprs = record_plan(call, fortran=False)
    params = c_params(call)
    slow_params = "void *fb_ra" + (", " + params if params != "void" else "")
    fast_args = ", ".join([call.ident, "fb_sp", "0"] + exprs)
    # The fast path (single-threaded, TSC) is all this function does; anything else
    # (a thread's first call, MPI_THREAD_MULTIPLE, the clock_gettime timer, recording off, a
    # nested call) is the out-of-line fb_slow_ function's, so that its set-up costs the fast
    # path nothing.
    slow = [f"static __attribute__((noinline)) int fb_slow_{call.name}({slow_params})", "{",
            f"    if (!fb_enter({call.ident}))",
            f"        return P{call.name}({names});"]
    slow += before
    slow += ["    uint64_t fb_t0 = fb_now();",
             f"    int fb_rc = P{call.name}({names});",
             "    fb_span_t fb_sp = {fb_ra, fb_t0, fb_now(), 0};",
             "    fb_leave();",
             f"    fb_rec_{call.kind}({fast_args});",
             "    return fb_rc;",
             "}",
             ""]
    lines = slow + [head.rstrip("\n")] + forget_sizes(call) + [
             "    if (FB_UNLIKELY(!fb_enter_fast()))",
             f"        return fb_slow_{call.name}(__builtin_return_address(0){', ' + names if names else ''});"]
    lines += before
    record = f"    fb_rec_{call.kind}({fast_args});"
    if call.kind in ("send", "recv"):
        return "\n".join(p2p_wrapper(call, lines, exprs, params, names))
    lines += [
        "    fb_start_fast(); /* the start tick, thread-local: no register kept across PMPI */",
        f"    fb_tls.rc = P{call.name}({names});",
        "    fb_span_t fb_sp = {__builtin_return_address(0), fb_depth, fb_tsc(), 1};",
        "    fb_leave_fast();",
        record,
        "    return fb_tls.rc;",
        "}",
        "",
    ]
    return "\n".join(lines)


def p2p_wrapper(call: Call, lines: List[str], exprs: List[str], params: str, names: str) -> List[str]:
    """Point-to-point (send, recv): a call that repeats the wrapper's last arguments adds its
    time to the wrapper's entry (fb_ent_t, fb_ent_hit) and nothing else. Any other call goes
    on to fb_miss_ (a tail call: same arguments, the call site left in the thread-local
    block), which records it through its slot (fb_p2p_fast: the arguments the record needs
    wait in the thread-local block, one store each and one load after, not in registers
    saved around PMPI) and notes its arguments; fb_adopt_ also gives them to the entry
    first (fb_ent_take) when they come twice in a row with no call of the entry's between,
    or when the entry has none yet."""
    is_send = call.kind == "send"
    keep = ["count", "type", "peer", "comm"][:len(exprs)]
    if not is_send:
        keep = keep[:2]
    pairs = list(zip(keep, exprs))

    # PMPI takes the datatype back from memory: rdtsc overwrites the register it came in.
    def typed(source: str) -> str:
        return ", ".join(source if a is call.by_role.get("type") else a.name for a in call.args)

    record = [f"    fb_tls.p2p_{k} = {e};" for k, e in zip(["count", "type", "peer", "comm"], exprs)]
    record += ["    fb_start_fast(); /* the start tick, thread-local: no register kept across PMPI */",
               f"    fb_tls.rc = P{call.name}({typed('fb_tls.p2p_type')});",
               f"    return fb_p2p_fast({call.ident}, fb_tls.p2p_ra, {int(is_send)});", "}", ""]
    peer_comm = f"{exprs[2]}, {exprs[3]}" if is_send else "0, MPI_COMM_NULL"
    adopt = [f"static __attribute__((noinline, cold)) int fb_adopt_{call.name}({params})", "{",
             f"    fb_ent_take({call.ident}, fb_tls.p2p_ra, {exprs[0]}, {exprs[1]}, {peer_comm}, {int(is_send)});"]
    adopt += record
    again = " && ".join(f"fb_e->m{k} == {e}" for k, e in pairs)
    miss = [f"static __attribute__((noinline)) int fb_miss_{call.name}({params})", "{",
            f"    fb_ent_t *fb_e = &fb_ents[{call.ident}];",
            "    void *fb_ra = fb_tls.p2p_ra;",
            f"    if (FB_UNLIKELY(!fb_e->ra) || (fb_e->mra == fb_ra && {again} && fb_e->miss_n == fb_e->n))",
            f"        return fb_adopt_{call.name}({names});",
            "    fb_e->mra = fb_ra;"]
    miss += [f"    fb_e->m{k} = {e};" for k, e in pairs]
    miss += ["    fb_e->miss_n = fb_e->n;"]
    miss += record
    same = " || ".join(f"FB_UNLIKELY(fb_e->{k} != {e})" for k, e in pairs)
    body = [f"    fb_ent_t *fb_e = &fb_ents[{call.ident}];",
            f"    if (FB_UNLIKELY(fb_e->ra != __builtin_return_address(0)) || {same}) {{",
            "        fb_tls.p2p_ra = __builtin_return_address(0);",
            f"        return fb_miss_{call.name}({names});",
            "    }",
            "    fb_start_fast(); /* the start tick, thread-local: no register kept across PMPI */",
            f"    int fb_rc = P{call.name}({typed('fb_e->type')});",
            f"    return fb_ent_hit({call.ident}, fb_e, fb_rc);", "}", ""]
    # fb_adopt_ and fb_miss_ go before the wrapper (after its fb_slow_ function)
    head_at = next(i for i, line in enumerate(lines) if line.startswith("FB_EXPORT"))
    return lines[:head_at] + adopt + miss + lines[head_at:] + body


# ------------------------------------------------------------------ Fortran wrappers

def fortran_wrappers(call: Call, family: str) -> str:
    """family 'f77': mpif.h and use mpi; 'f08': use mpi_f08's mpi_x_f08_ (Open MPI's names, and
    MPICH's for calls without a choice buffer); 'f08ts': MPICH's mpi_x_f08ts_."""
    fargs = call.fortran_args
    params = [f_param(a) for a in fargs]
    has_ierr = call.kind != "pcontrol"
    if has_ierr:
        params.append("MPI_Fint *ierr")
    # gfortran passes the length of each CHARACTER argument after all the others.
    lengths = [f"fb_len_{a.name}" for a in fargs if a.role == "str"]
    params += [f"size_t {n}" for n in lengths]
    plist = ", ".join(params) if params else "void"
    names = [a.name for a in fargs] + (["ierr"] if has_ierr else []) + lengths
    args = ", ".join(names)
    if family == "f77":
        real = f"p{call.lower}_"
        impl = f"fbf_{call.name}"
        aliases = [f"{call.lower}_", f"{call.lower}__", call.lower, call.name.upper()]
        out = [f"extern void {real}({plist}) __attribute__((weak));"]
    else:
        # The PMPI entry point is Open MPI's pmpi_x_SUFFIX or MPICH's pmpir_x_SUFFIX, whichever
        # the Fortran library loaded at run time defines.
        suffix = family + "_"
        impl = f"fb{family}_{call.name}"
        aliases = [f"{call.lower}_{suffix}"]
        ompi, mpich = f"p{call.lower}_{suffix}", f"pmpir_{call.lower[4:]}_{suffix}"
        real = "fb_real"
        out = [f"extern void {ompi}({plist}) __attribute__((weak));",
               f"extern void {mpich}({plist}) __attribute__((weak));"]
    out += [f"static void {impl}({plist})", "{"]
    if family != "f77":
        out += [f"    void (*const fb_real)({plist}) = {ompi} ? {ompi} : {mpich};"]
    out += [f"    if (FB_UNLIKELY(!{real}))",
            f"        fb_fortran_missing(\"{real if family == 'f77' else ompi}\");"]
    out += forget_sizes(call)
    if call.kind == "init":
        out += ["    fb_depth++;", f"    {real}({args});", "    fb_depth--;", "    fb_init();"]
    elif call.kind == "finalize":
        out += ["    fb_finalize();", f"    {real}({args});"]
    elif call.kind == "pcontrol":
        out += [f"    fb_pcontrol((int)*{call.by_role['level'].name});"]
    else:
        before, exprs = record_plan(call, fortran=True, descriptors=family == "f08ts")
        rec_args = ", ".join([call.ident, "fb_sp", "1"] + exprs)
        out += [f"    if (!fb_enter({call.ident})) {{", f"        {real}({args});",
                "        return;", "    }"]
        out += before
        out += ["    uint64_t fb_t0 = fb_now();",
                f"    {real}({args});",
                "    fb_span_t fb_sp = {__builtin_return_address(0), fb_t0, fb_now(), 0};",
                "    fb_leave();",
                f"    fb_rec_{call.kind}({rec_args});"]
    out += ["}"]
    for alias in aliases:
        out.append(f"FB_EXPORT void {alias}({plist}) __attribute__((alias(\"{impl}\")));")
    out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------ files

HEADER = "/* Generated by gen_wrappers.py from mpi_calls.tbl; do not edit. */\n"


def calls_header(calls: List[Call]) -> str:
    recorded = [c for c in calls if c.kind not in SPECIAL_KINDS]
    out = [HEADER, "#ifndef FB_CALLS_H", "#define FB_CALLS_H", "", "enum {"]
    out += [f"    {c.ident} = {i}," for i, c in enumerate(recorded)]
    out += [f"    FB_NCALLS = {len(recorded)}", "};", "",
            'extern const char *const fb_call_names[FB_NCALLS] __attribute__((visibility("hidden")));',
            "", "#endif", ""]
    return "\n".join(out)


def guarded(call: Call, text: str) -> str:
    return f"#if defined({call.guard})\n{text}#endif\n" if call.guard else text


def wrappers_source(calls: List[Call]) -> str:
    recorded = [c for c in calls if c.kind not in SPECIAL_KINDS]
    out = [HEADER, '#include "fbprof.h"',
           "#if defined(OPEN_MPI) && OPEN_MPI",
           "#include <mpi-ext.h> /* MPIX_ extensions, named by ?OMPI_HAVE_MPI_EXT_* lines */",
           "#endif", "",
           "_Static_assert(sizeof(MPI_Fint) == sizeof(int), \"Fortran INTEGER arrays are read as int\");", "",
           "const char *const fb_call_names[FB_NCALLS] = {"]
    out += [f'    "{c.name}",' for c in recorded]
    out += ["};", "", "/* ---------------- C bindings ---------------- */", ""]
    out += [guarded(c, c_wrapper(c)) for c in calls]
    fortran = [c for c in calls if not c.guard]
    out += ["/* ---------------- Fortran: mpif.h and use mpi ---------------- */", ""]
    out += [fortran_wrappers(c, "f77") for c in fortran]
    out += ["/* ---------------- Fortran: use mpi_f08 (Open MPI; MPICH without a choice buffer) ---------------- */", ""]
    out += [fortran_wrappers(c, "f08") for c in fortran]
    out += ["/* ---------------- Fortran: use mpi_f08 (MPICH, calls with a choice buffer) ---------------- */", ""]
    out += [fortran_wrappers(c, "f08ts") for c in fortran if c.has_choice_buffer]
    return "\n".join(out)


def write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def main(argv: List[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    table, out_dir = Path(argv[1]), Path(argv[2])
    try:
        calls = parse_table(table)
    except (OSError, TableError) as exc:
        print(f"gen_wrappers.py: {exc}", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    write_if_changed(out_dir / "fb_calls.h", calls_header(calls))
    write_if_changed(out_dir / "fb_wrappers.c", wrappers_source(calls))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
