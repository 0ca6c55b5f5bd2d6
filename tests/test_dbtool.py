"""miopy-db: export, import and merge keep every record, the faster perf record wins, bad text names its line."""
import pytest

from miopy import BadParam, db
from miopy.cli import dbtool

DEV, OTHER = "Platform|Dev A|1.0|4CU", "Platform|Dev B|2.0|8CU"
KEY = "4-6-6-3x3-4-6-6-1-1x1-1x1-1x1-0-NCHW-FP32-F"


def _filled(path, time_ms=1.0, date_offset=0):
    store = db.Store(path, readonly=False)
    perf = db.PerfDb(store, "test")
    perf.put(DEV, KEY, "ConvDirectNaive", {"WG": 128}, time_ms)
    perf.put(OTHER, KEY, "ConvDirectLocal", {"K_BLK": 8, "DOUBLE_BUF": True}, 2.5)
    db.FindDb(store).put(DEV, KEY, [db.FindRecord("ConvDirectNaive", "naive", time_ms, 0, {"WG": 128}),
                                     db.FindRecord("ConvIm2colGemm", "gemm", 3.0, 4096, {"TILE_M": 16})])
    return store


def test_export_then_import_reproduces_every_record(tmp_path):
    src = _filled(tmp_path / "a.db")
    text = dbtool.export_text(src)
    assert "[perf Platform|Dev A|1.0|4CU]" in text and f"{KEY}=ConvDirectNaive:" in text
    assert dbtool.main(["import", str(_write(tmp_path / "x.txt", text)), "--db", str(tmp_path / "b.db")]) == 0
    dst = db.Store(tmp_path / "b.db", readonly=True)
    assert [r[:5] for r in dbtool.perf_rows(dst)] == [r[:5] for r in dbtool.perf_rows(src)]
    assert {k: [r[:5] for r in v] for k, v in dbtool.find_rows(dst).items()} == \
        {k: [r[:5] for r in v] for k, v in dbtool.find_rows(src).items()}


def test_merge_keeps_the_faster_perf_record(tmp_path, capsys):
    _filled(tmp_path / "slow.db", time_ms=5.0)
    _filled(tmp_path / "fast.db", time_ms=0.5)
    out = tmp_path / "out.db"
    assert dbtool.main(["merge", str(tmp_path / "slow.db"), str(tmp_path / "fast.db"), "--out", str(out)]) == 0
    rows = {r[:3]: r for r in dbtool.perf_rows(db.Store(out, readonly=True))}
    assert len(rows) == 2 and rows[(DEV, KEY, "ConvDirectNaive")][4] == 0.5
    assert dbtool.main(["show", "--db", str(out)]) == 0
    assert "2 perf record(s), 1 find record(s)" in capsys.readouterr().out


@pytest.mark.parametrize("line", ["[nonsense X]", f"{KEY}=ConvDirectNaive:not json@1.0", "no equals sign"])
def test_bad_text_names_its_line(line):
    with pytest.raises(BadParam, match="line 3"):
        dbtool.parse_text(f"# header\n[perf {DEV}]\n{line}\n")


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("content", [b"not a database at all " * 50, b""])
def test_a_source_that_is_not_a_db_is_an_error_not_an_empty_merge(tmp_path, capsys, content):
    _filled(tmp_path / "good.db")
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    out = tmp_path / "out.db"
    assert dbtool.main(["merge", str(tmp_path / "good.db"), str(bad), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sources" in err[0] and "not a readable miopy DB" in err[0], err
    assert dbtool.main(["show", "--db", str(bad)]) == 1
    assert bad.read_bytes() == content   # looked at, never moved aside or rebuilt
