"""The application catalogue on real codes: every recipe at 1 and 2 ranks with its smallest input,
the figure of merit checked against the application's own output file; scale --app; the
study's analysis and report; the one-line message for a missing application."""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fabricbench.apps import all_recipes, get_recipe
from fabricbench.store import open_db

RECIPES = [r.name for r in all_recipes()]


def need_app(name: str):
    recipe = get_recipe(name)
    if not recipe.installed():
        pytest.skip(f"{name} needs the Debian package {recipe.package} (scripts/install-test-deps.sh apps)")
    return recipe


def own_fom(name: str, folder: Path) -> float:
    """The figure of merit as the application's own output file has it (read independently of the recipe)."""
    if name.startswith("lammps"):
        text = (folder / "log.lammps").read_text()
        return float(re.findall(r"^Performance: .*?([\d.]+) timesteps/s", text, re.M)[-1])
    if name == "qe-si":
        root = ET.parse(folder / "out/si.save/data-file-schema.xml").getroot()
        steps = int(root.find(".//n_scf_steps").text)
        wall = float(root.find(".//timing_info/partial[@label='electrons']/wall").text)
        return wall / steps
    if name == "openfoam-cavity":
        rows = [line.split() for line in (folder / "postProcessing/timing/0/timeInfo.dat").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
        cpu = [float(r[1]) for r in rows]
        return (cpu[-1] - cpu[0]) / (len(cpu) - 1)
    raise AssertionError(name)


# The stdout figures are rounded (LAMMPS: 3 decimals; QE: 0.01 s per timer; OpenFOAM: 0.01 s per step).
TOLERANCE = {"lammps-lj": 1e-3, "lammps-eam": 1e-3, "qe-si": 0.01, "openfoam-cavity": 0.01}


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("name", RECIPES)
def test_every_application_at_1_and_2_ranks_matches_its_own_output_file(cli, db_path, tmp_path, name, ranks):
    recipe = need_app(name)
    work = tmp_path / "work"
    profiled = (name, ranks) == ("lammps-lj", 2)  # one run also checks the stored profile (the same launch)
    out = cli("app", "run", name, "--np", str(ranks), "--size", "1", "--workdir", str(work), "--json",
              *(["--profile"] if profiled else []), timeout=600)
    data = json.loads(out.stdout)
    folder = work / f"np{ranks}"
    assert (folder / recipe.output_file).is_file()
    assert data["fom"] > 0 and data["time_s"] > 0 and data["ranks"] == ranks and data["fom_unit"] == recipe.fom.unit
    expected = own_fom(name, folder)
    steps = max(1, int(data["facts"].get("steps", 1)) - 1)
    assert data["fom"] == pytest.approx(expected, rel=TOLERANCE[name] if name.startswith("lammps") else 0,
                                        abs=0 if name.startswith("lammps") else 2 * TOLERANCE[name] / (steps if name == "openfoam-cavity" else 1))
    db = open_db(str(db_path))
    (run,) = db.list_runs(kind="app")
    assert run.status == "complete" and run.tags["app"] == name and run.provenance["application"]["package"] == recipe.package
    items = db.measurements(run.id, benchmark="app")
    by = {m.metric: m for m in items if m.metric != "timer"}
    assert by["fom"].value == data["fom"] and by["fom"].params == {"app": name, "size": 1, "ranks": ranks, "nodes": 1}
    assert by["time"].value == data["time_s"] and by["wall"].value > 0
    # MPI_Init to MPI_Finalize (the profiler's): inside the launch, and every figure says its resolution.
    # OpenFOAM without -parallel (1 rank) never initialises MPI: no such time, and the run says so.
    if name == "openfoam-cavity" and ranks == 1:
        assert "runtime" not in by and data["runtime_s"] is None and "no MPI_Init to MPI_Finalize" in run.message
    else:
        assert 0 < by["runtime"].value <= by["wall"].value and data["runtime_s"] == by["runtime"].value
    assert all(m.detail.get("resolution_s") for m in by.values() if m.metric != "fom" or name != "qe-si")
    if name == "openfoam-cavity":  # ClockTime (whole seconds), or ExecutionTime (0.01 s) when that is larger
        assert by["time"].detail["resolution_s"] in (1.0, 0.01)
    if ranks > 1:
        assert data["headline"] == "runtime"
    timers = {m.params["section"]: m.value for m in items if m.metric == "timer"}
    assert timers == data["timers"] and timers
    if name.startswith("lammps"):
        assert {"Pair", "Comm", "Neigh"} <= set(timers)
        log = (folder / "log.lammps").read_text()
        loop = float(re.findall(r"^Loop time of ([\d.]+) on (\d+) procs", log, re.M)[-1][0])
        assert data["time_s"] == pytest.approx(loop) and f"on {ranks} procs" in log
    if profiled:  # the profile is stored with the app run
        assert data["profile"] is True
        shown = cli("show-profile", str(data["run"])).stdout
        assert "MPI" in shown and "Top MPI calls" in shown


@pytest.mark.mpi
def test_scale_with_a_catalogued_app(cli, db_path):
    need_app("lammps-lj")
    cli("scale", "--app", "lammps-lj", "--np-list", "1,2", "--repeat", "1", "--tag", "fabric=shm", timeout=600)
    db = open_db(str(db_path))
    (run,) = db.list_runs(kind="scaling")
    assert run.tags == {"fabric": "shm", "app": "lammps-lj"}
    study = run.provenance["study"]
    assert study["primary_metric"] == "fom" and study["fom_unit"] == "timesteps/s" and study["application"]["name"] == "lammps-lj"
    items = db.measurements(run.id, benchmark="scale")
    fom = [m for m in items if m.metric == "fom"]
    assert sorted(m.params["ranks"] for m in fom) == [1, 2] and all(m.value > 0 for m in fom)
    assert all({"Pair", "Comm"} <= set(m.detail["timers"]) for m in fom)
    assert all(m.value > 0 for m in items if m.metric == "time")
    # Each figure keeps the step LAMMPS printed it with ("Loop time of 20.8362": 1e-4 s), well below the figure.
    assert all(0 < m.detail["resolution_s"] < 0.01 * m.value for m in items if m.metric in ("time", "fom"))


def test_scale_refuses_app_and_command_together(cli):
    out = cli("scale", "--app", "lammps-lj", "--np-list", "1", "--", "./x", check=False)
    assert out.returncode == 2 and "not both" in out.stderr
    out = cli("scale", "--app", "nosuch", "--np-list", "1", check=False)
    assert out.returncode == 2 and "unknown application 'nosuch'" in out.stderr and "lammps-lj" in out.stderr


def test_missing_application_is_one_line_naming_the_package(db_path, tmp_path):
    import subprocess

    env = dict(os.environ, PATH=str(tmp_path))  # nothing on PATH: no lmp
    proc = subprocess.run([sys.executable, "-m", "fabricbench", "--db", str(db_path), "app", "run", "lammps-lj", "--np", "1"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'lmp' is not installed" in lines[0] and "apt-get install lammps" in lines[0]
    assert "Traceback" not in proc.stderr


def test_study_analysis_and_report_from_published_style_numbers(cli, db_path, tmp_path):
    """Two fabrics, two applications (tags app and fabric): relative performance, x faster, efficiency."""
    csv = tmp_path / "study.csv"
    csv.write_text(
        "app,fabric,nodes,ranks,time\n"
        "lj,gige,1,1,10\nlj,gige,2,2,8\nlj,gige,4,4,8\n"
        "lj,lab-100m,1,1,10\nlj,lab-100m,2,2,16\nlj,lab-100m,4,4,32\n"
        "eam,gige,1,1,20\neam,gige,2,2,10\neam,gige,4,4,5\n"
        "eam,lab-100m,1,1,20\neam,lab-100m,2,2,11\neam,lab-100m,4,4,6.25\n"
    )
    cli("import-scaling", str(csv))
    from fabricbench.analysis import apps as aa

    db = open_db(str(db_path))
    runs = [(db.load(r.id).run, db.load(r.id).measurements) for r in sorted(db.list_runs(kind="scaling"), key=lambda r: r.id)]
    studies = {st.app: st for st in aa.compare_apps(aa.series_of(runs))}
    lj, eam = studies["lj"], studies["eam"]
    assert lj.reference == "gige" and lj.fabrics == ["gige", "lab-100m"]
    assert [r.relative["lab-100m"] for r in lj.rows] == pytest.approx([1.0, 0.5, 0.25])
    assert [r.relative["lab-100m"] for r in eam.rows] == pytest.approx([1.0, 10 / 11, 0.8])
    assert [r.efficiency["gige"] for r in eam.rows] == pytest.approx([1.0, 1.0, 1.0])
    assert [r.efficiency["lab-100m"] for r in lj.rows] == pytest.approx([1.0, 10 / 32, 10 / 128])
    summary = {(app, fab): x for app, fab, _n, x in aa.slowdown_summary(studies.values())}
    assert summary[("lj", "lab-100m")] < summary[("eam", "lab-100m")]

    report = tmp_path / "r.html"
    ids = [str(r.id) for r in db.list_runs(kind="scaling")]
    cli("report", *ids, "-o", str(report))
    html = report.read_text()
    assert "Applications on the fabrics" in html, re.findall(r"<h2[^<]*</h2>|could not be built[^<]*", html)
    assert 'data-slug="apps-relative"' in html and "Relative performance per node count" in html
    assert "0.25x" in html and "0.80x" in html


@pytest.mark.mpi
@pytest.mark.lab
def test_study_apps_on_two_lab_fabrics(cli, db_path, tmp_path):
    need_app("lammps-lj")
    report = tmp_path / "study.html"
    out = cli("study", "apps", "--fabric", "fast:1gbit", "--fabric", "slow:100mbit", "--apps", "lammps-lj",
              "--nodes", "1,2", "--repeat", "1", "--lab-name", "fbtapps", "-o", str(report), timeout=900)
    assert "x faster" in out.stdout and "wrote" in out.stdout
    db = open_db(str(db_path))
    runs = sorted(db.list_runs(kind="scaling"), key=lambda r: r.id)
    assert [r.label for r in runs] == ["lammps-lj on fast", "lammps-lj on slow"]
    assert [r.tags["fabric"] for r in runs] == ["lab-1g", "lab-100m"] and runs[0].tags["study"] == runs[1].tags["study"]
    assert all(r.provenance["launcher"] == "lab" and r.status == "complete" for r in runs)
    page = report.read_text()
    assert 'data-slug="apps-relative"' in page and "repetitions (fom)" in page
    assert "link rates: fast 1gbit, slow 100mbit" in page and "Reproduce with: fabricbench --db" in page
    from fabricbench.lab import current_lab

    assert current_lab("fbtapps") is None  # the study takes its lab down
