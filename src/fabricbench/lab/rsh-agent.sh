#!/bin/sh
# fabricbench lab rsh agent: "ssh HOST COMMAND..." where HOST is a lab node, i.e. a
# network namespace made by `fabricbench lab up` (named LAB-nI, which is also the
# node's host name).
#
# Open MPI (--mca plm_rsh_agent) and MPICH hydra (-launcher rsh -launcher-exec) call
# it as they call ssh: options, the host, then command words that a remote login shell
# would join with spaces and run. So does this agent, inside the node's namespace and
# a UTS namespace of its own whose host name is the node's name (gethostname and
# MPI_Get_processor_name then give distinct lab host names).
while [ $# -gt 0 ]; do
    case "$1" in
        -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;  # ssh options that take a value
        --) shift; break ;;
        -*) shift ;;
        *) break ;;
    esac
done
host=$1
[ $# -gt 0 ] && shift
case "$host" in
    [a-z]*-n[0-9]*) ;;
    *) echo "fabricbench lab agent: '$host' is not a lab node name (LAB-nI, as in the lab's hostfile)" >&2; exit 255 ;;
esac
case "$host" in
    *[!a-z0-9-]*) echo "fabricbench lab agent: bad host name '$host'" >&2; exit 255 ;;
esac
if [ ! -e "/run/netns/$host" ]; then
    echo "fabricbench lab agent: no lab node '$host' (no network namespace /run/netns/$host); is the lab up? see 'fabricbench lab status'" >&2
    exit 255
fi
if [ $# -eq 0 ]; then
    echo "fabricbench lab agent: no command given for $host (interactive logins are not supported)" >&2
    exit 255
fi
exec ip netns exec "$host" unshare --uts -- /bin/sh -c 'printf %s "$1" > /proc/sys/kernel/hostname || exit 255; shift; exec /bin/sh -c "$*"' fabricbench-lab-agent "$host" "$@"
