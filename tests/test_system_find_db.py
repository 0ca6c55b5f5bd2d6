"""The resumable find-record builder (build_system_db --find) and find serving its shipped records."""
from miopy import db
from miopy.cli import build_system_db
from miopy.conv import networks
from miopy.find import find_problem, get_solutions


def test_find_build_writes_every_direction_resumes_and_ships(fresh_dbs, handle, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(networks.NETWORKS, "tiny", (networks.Layer("t1", 4, 6, 6, 4, 3, 3, 1, 1),
                                                    networks.Layer("t2", 4, 5, 5, 4, 1, 1)))
    out = tmp_path / "system.db"
    args = ["--find", "--out", str(out), "--networks", "tiny", "-n", "1", "-F", "0", "--jobs", "0"]
    assert build_system_db.main([*args, "--limit", "1"]) == 0
    built = db.BuildDb(out)
    assert len(built.find_problems(handle.info.device_id)) == 3          # forward, backward-data, -weights
    built.close()
    assert build_system_db.main(args) == 0                                 # resumes: only t2 is new
    assert "3 problems in" in capsys.readouterr().out
    built = db.BuildDb(out)
    keys = built.find_problems(handle.info.device_id)
    built.close()
    assert len(keys) == 6 and all(k.endswith(("-F", "-B", "-W")) for k in keys)
    monkeypatch.setenv("MIOPY_SYSTEM_DB_PATH", str(out))
    problem = networks.problems("tiny", 1)[0]
    served = find_problem(handle, problem, timer=lambda *a: 1.0)          # hybrid: the shipped ranking
    assert served.from_db and served[0].time_ms > 0
    assert get_solutions(handle, problem).from_db
    assert db.find_db().get(handle.info.device_id, problem.key()) == []   # the user DB was not written


def test_tuning_into_the_file_keeps_its_find_records(fresh_dbs, handle, tmp_path, monkeypatch):
    """Rewriting OUT's perf table (tuning, with --merge or without) never drops the find rows it holds: the
    shipped DB once lost all of them that way."""
    monkeypatch.setitem(networks.NETWORKS, "tiny", (networks.Layer("t1", 4, 6, 6, 4, 3, 3, 1, 1),))
    out = tmp_path / "system.db"
    assert build_system_db.main(["--find", "--out", str(out), "--networks", "tiny", "-n", "1", "-F", "1",
                                 "--jobs", "0"]) == 0
    built = db.BuildDb(out)
    found = built.find_problems(handle.info.device_id)
    built.close()
    assert len(found) == 1
    for merge in (["--merge"], []):
        assert build_system_db.main(["--out", str(out), "--networks", "tiny", "-n", "1", "--budget", "2",
                                     "--jobs", "0", "-S", "ConvDirectNaive", *merge]) == 0
        built = db.BuildDb(out)
        assert built.find_problems(handle.info.device_id) == found
        built.close()
        assert db.PerfDb(db.Store(out, readonly=True), "built").rows()


def test_find_build_finds_again_where_a_ranked_solver_applies_no_more(fresh_dbs, handle, tmp_path, monkeypatch,
                                                                      capsys):
    """A record ranking a solver that a changed rule now refuses is stale for find (_from_find_db), so the
    builder finds that problem again instead of keeping it."""
    from miopy.conv import registry
    monkeypatch.setitem(networks.NETWORKS, "tiny", (networks.Layer("t1", 4, 6, 6, 4, 3, 3, 1, 1),))
    out = tmp_path / "system.db"
    args = ["--find", "--out", str(out), "--networks", "tiny", "-n", "1", "-F", "1", "--jobs", "0"]
    assert build_system_db.main(args) == 0
    assert build_system_db.main(args) == 0
    assert "0 to find" in capsys.readouterr().out                         # current: kept
    built = db.BuildDb(out)
    ranked = built.find_solvers(handle.info.device_id)
    built.close()
    refused = next(s for s in registry.solvers() if s.id in next(iter(ranked.values())) and s.id != "ConvDirectNaive")
    monkeypatch.setattr(refused, "is_applicable", lambda *a, **k: False)
    assert build_system_db.main(args) == 0
    printed = capsys.readouterr().out
    assert "1 to find" in printed and "(1 of them again" in printed
