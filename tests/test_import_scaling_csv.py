"""The scaling CSV reader is a registered importer: `fabricbench import` takes a one-series file."""
import json
from pathlib import Path

from fabricbench.store import open_db

SEED004 = Path(__file__).parent / "data" / "scaling" / "seed004_lsdyna.csv"


def test_one_series_csv_imports_as_a_scaling_run(cli, db_path, tmp_path):
    one = tmp_path / "ib.csv"
    one.write_text("# LS-DYNA three-car crash on DDR InfiniBand (seed 004)\nnodes,time\n8,8000\n16,4760\n")
    out = json.loads(cli("import", str(one), "--tag", "fabric=ib-ddr", "--json").stdout)
    (result,) = out if isinstance(out, list) else out["files"]
    assert result["format"] == "scaling-csv" and result["kind"] == "scaling"
    db = open_db(str(db_path))
    run = db.get_run(result["run"])
    assert run.kind == "scaling" and run.provenance["study"]["primary_metric"] == "time"
    times = {m.params["nodes"]: m.value for m in db.measurements(run.id)}
    assert times == {8: 8000.0, 16: 4760.0}
    report = cli("scaling-report", str(run.id)).stdout
    assert "16" in report and "1.68" in report  # 8000 / 4760 = 1.68x speedup from 8 to 16 nodes


def test_several_series_point_to_import_scaling(cli, db_path):
    proc = cli("import", str(SEED004), check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "scaling series" in proc.stderr and "import-scaling" in proc.stderr
    assert not db_path.exists() or open_db(str(db_path)).list_runs() == []
