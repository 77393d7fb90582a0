#!/bin/sh
# Seed 004 (Cisco: LS-DYNA on Gigabit Ethernet vs DDR InfiniBand) reproduced from its published
# tables: import the numbers, then print the tables and write the HTML report with plots.
#   sh examples/seed004_lsdyna.sh [DATABASE]
set -e
here=$(dirname "$0")
db=${1:-seed004.db}
fabricbench --db "$db" import-scaling "$here/seed004_lsdyna.csv" --tag source=cisco-seed004
ids=$(fabricbench --db "$db" runs --kind scaling --tag source=cisco-seed004 --json |
      python3 -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin)))')
# Efficiency relative to 8 nodes (the smallest published scale); InfiniBand against GigE per case.
fabricbench --db "$db" scaling-report $ids --baseline 8 --reference gige
fabricbench --db "$db" scaling-report $ids --baseline 8 --reference gige -o seed004_lsdyna.html
