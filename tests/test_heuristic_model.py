"""Immediate mode from a model: it recovers a rule that decides the winner on held-out problems, serves only
the devices it matches, falls back to the shape rule, survives a corrupt file, and retrains from a find DB."""
import dataclasses
import logging

import numpy as np
import pytest

from miopy import Direction, db
from miopy.cli import tune
from miopy.conv import heuristic, heuristic_model, heuristic_training, registry
from miopy.find import get_solutions
from tests.helpers import make_problem

SOLVERS = ("ConvGemm1x1", "ConvWinograd3x3F2", "ConvDirectLocal", "ConvDirectNaive")


def rule_winner(p) -> str:
    """The rule the synthetic records follow (one the shape rule gets wrong for small C)."""
    if p.r == 1:
        return "ConvGemm1x1" if p.c >= 32 else "ConvDirectLocal"
    return "ConvWinograd3x3F2" if p.r == 3 and p.k >= 64 else "ConvDirectLocal"


def synthetic(seed: int, count: int) -> dict:
    """Find records where rule_winner is fastest and the others 1.3-3x slower (a measured-looking spread)."""
    rng, out = np.random.default_rng(seed), {}
    while len(out) < count:
        c, k = (int(2 ** rng.integers(2, 9)) for _ in range(2))
        h, r = int(rng.choice([7, 14, 28])), int(rng.choice([1, 3, 5]))
        p = make_problem(Direction(int(rng.choice([1, 2, 4]))), int(rng.choice([1, 8])), c, h, h, k, r, r, pad=r // 2)
        win = rule_winner(p)
        times = {s: p.flops() * 1e-9 * (1.0 if s == win else rng.uniform(1.3, 3.0)) for s in SOLVERS}
        times = {s: t for s, t in times.items() if not (s == "ConvGemm1x1" and r != 1)
                 and not (s == "ConvWinograd3x3F2" and r != 3)}
        out[p.key()] = times
    return out


@pytest.fixture(scope="module")
def model(handle):
    """A model for the test device (PoCL's CPU in CI, the GPU on the GPU machine), trained on the synthetic rule."""
    return heuristic_training.train(synthetic(0, 90), [handle.info.name], rounds=30)


def test_the_model_recovers_the_rule_on_held_out_problems(model):
    def choose(problem, ran):
        scores = model.scores(problem)
        return min(ran, key=lambda s: scores.get(s, np.inf))
    held_out = synthetic(1, 40)
    quality = heuristic_training.evaluate(choose, held_out)
    assert quality["problems"] == 40 and quality["within_1.1x"] >= 0.9
    shape = heuristic_training.evaluate(lambda p, ran: next(s.id for s in heuristic.shape_rank(
        p, [registry.get(s) for s in SOLVERS]) if s.id in ran), held_out)
    assert shape["within_1.1x"] < quality["within_1.1x"]      # the rule is not the shape rule's


def test_round_trip_and_device_matching(model, tmp_path, handle, monkeypatch):
    path = tmp_path / "m.json"
    heuristic_model.write_model(model, path)
    monkeypatch.setenv("MIOPY_HEURISTIC_MODEL", str(path))
    loaded = heuristic_model.model_for(handle.info.name)
    assert loaded is not None and loaded.scores(make_problem(1, 1, 8, 7, 7, 8, 1, 1)) == \
        model.scores(make_problem(1, 1, 8, 7, 7, 8, 1, 1))
    assert heuristic_model.model_for("Some Other GPU") is None


def test_model_ranks_immediate_mode_and_shape_rule_is_the_fallback(model, tmp_path, handle, fresh_dbs, monkeypatch):
    problem = make_problem(Direction.FORWARD, 1, 8, 7, 7, 8, 1, 1)     # 1x1, C=8: the rule says direct
    elsewhere = tmp_path / "other.json"                                 # a model for another device only
    heuristic_model.write_model(dataclasses.replace(model, match=("no-such-device",)), elsewhere)
    monkeypatch.setenv("MIOPY_HEURISTIC_MODEL", str(elsewhere))
    by_shape = [r.solver_id for r in get_solutions(handle, problem)]
    general = [s for s in by_shape if registry.get(s).device_class is None]   # a CPU's own solvers lead on a CPU
    assert general[0] in ("ConvGemv1x1", "ConvGemm1x1")                 # the shape rule's GEMM first
    path = tmp_path / "m.json"
    heuristic_model.write_model(model, path)
    monkeypatch.setenv("MIOPY_HEURISTIC_MODEL", str(path))
    by_model = [r.solver_id for r in get_solutions(handle, problem)]
    known = [s for s in by_model if s in model.solvers]
    assert known[0] == "ConvDirectLocal" and sorted(by_model) == sorted(by_shape)   # the rule's winner
    unknown = [i for i, s in enumerate(by_shape) if s not in model.solvers]
    assert unknown and all(by_model[i] == by_shape[i] for i in unknown)     # unknown ones keep their places


@pytest.mark.parametrize("content", ["{not json", '{"format": 1, "features": []}', '{"format": 1}', "",
                                     '{"format": 3, "features": [], "match": ["a"], "solvers": {}}'])
def test_a_corrupt_model_file_falls_back_with_a_warning(tmp_path, handle, monkeypatch, caplog, content):
    path = tmp_path / f"bad{abs(hash(content))}.json"
    path.write_text(content)
    monkeypatch.setenv("MIOPY_HEURISTIC_MODEL", str(path))
    problem = make_problem(Direction.FORWARD, 1, 8, 7, 7, 8, 1, 1)
    candidates = [s for s in registry.ALL if s.is_applicable(problem, handle.info)]
    with caplog.at_level(logging.WARNING):
        ranked = heuristic.rank(problem, candidates, handle.info)
    assert ranked == heuristic.shape_rank(problem, candidates)
    assert "unusable" in caplog.text


def test_keys_parse_back_to_their_problems():
    for p in (make_problem(Direction.BACKWARD_WEIGHTS, 2, 6, 9, 7, 6, 3, 2, pad=(1, 0), stride=2, groups=3),
              make_problem(Direction.FORWARD, 1, 4, 5, 5, 4, 1, 1)):
        assert heuristic_training.problem_from_key(p.key()).key() == p.key()
    assert heuristic_training.problem_from_key("pool-3x3-whatever") is None


def test_train_heuristic_cli_retrains_from_a_find_db(tmp_path, capsys):
    path, out = tmp_path / "user.db", tmp_path / "model.json"
    built = db.BuildDb(path)
    for key, times in synthetic(2, 30).items():
        ranked = sorted(times.items(), key=lambda kv: kv[1])
        built.put_find("PoCL|cpu|1|2CU", key, [db.FindRecord(s, "x", t, 0, {}) for s, t in ranked])
    built.close()
    assert tune.main(["--train-heuristic", "--db", str(path), "--out", str(out), "--match", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "trained on 30 problems" in text and "within 1.1x" in text
    assert set(heuristic_model.Model.from_json(out.read_text()).solvers) == set(SOLVERS)
    assert tune.main(["--train-heuristic", "--db", str(tmp_path / "none.db"), "--out", str(out)]) == 1


def test_a_format_1_model_still_loads_and_reads_its_own_features():
    old = {"format": 1, "kind": "miopy-conv-heuristic", "features": list(heuristic_model.FEATURES_V1), "match": ["a"],
           "solvers": {"ConvDirectLocal": {"base": 0.5, "rate": 1.0, "trees": [[16, 0.5, 1.0, -1.0]]}}}
    model = heuristic_model.Model.from_json(__import__("json").dumps(old))
    assert model.format == 1
    assert model.scores(make_problem(Direction.FORWARD, 1, 8, 7, 7, 8, 1, 1))["ConvDirectLocal"] == -0.5   # is_1x1
    assert model.scores(make_problem(Direction.FORWARD, 1, 8, 7, 7, 8, 3, 3))["ConvDirectLocal"] == 1.5
    bad = dict(old, solvers={"X": {"base": 0, "rate": 1, "trees": [[len(heuristic_model.FEATURES_V1), 0, 0, 0]]}})
    with pytest.raises(ValueError):        # a format-1 tree may not read a feature format 1 lacks
        heuristic_model.Model.from_json(__import__("json").dumps(bad))


def test_array_prediction_equals_walking_the_trees():
    rng = np.random.default_rng(3)
    nf = len(heuristic_model.FEATURES)

    def tree(depth):
        if depth == 0 or rng.random() < 0.3:
            return float(rng.normal())
        return [int(rng.integers(nf)), float(rng.normal()), tree(depth - 1), tree(depth - 1)]
    trees = tuple(tree(3) for _ in range(25)) + (0.25,)
    m = heuristic_model.SolverModel(0.1, 0.2, trees)
    for _ in range(20):
        x = rng.normal(size=nf)
        walked = 0.1 + 0.2 * sum(heuristic_training._predict_tree(t, x) for t in trees)
        assert m.predict(x) == pytest.approx(walked, abs=1e-12)
    assert heuristic_model.SolverModel(0.7, 0.2, ()).predict(np.zeros(nf)) == 0.7


def test_fit_averages_its_members_and_ranks_relative_to_a_reference():
    records = synthetic(4, 40)
    grid = ({"clip": 0.5, "rate": 0.15, "rounds": 10}, {"clip": 2.0, "rate": 0.1, "rounds": 20})
    fitted = heuristic_training.fit(records, ["a"], grid=grid)
    members = [heuristic_training.train(records, ["a"], **point) for point in grid]
    assert fitted.reference == members[0].reference == heuristic_training.reference_solver(records)
    # of the solvers that ran everywhere (GEMM 1x1 and Winograd run on some shapes only), the one often best
    assert fitted.reference == "ConvDirectLocal"               # naive, the other, is never best
    for p in (make_problem(Direction.FORWARD, 1, 64, 14, 14, 128, 3, 3, pad=1), make_problem(2, 8, 8, 7, 7, 16, 1, 1)):
        expected = {s: np.mean([m.scores(p)[s] for m in members]) for s in fitted.solvers}
        assert fitted.scores(p) == pytest.approx(expected, abs=1e-4)     # leaves rounded to 6 digits


def test_held_out_picks_are_immediate_modes_picks(model):
    """cross_validate picks what immediate mode would: the model's order over the shape rule's, registry order
    within an algorithm, and a solver the model never saw keeps the shape rule's place instead of losing to
    every solver it knows (a fold can hold a solver's only training layer)."""
    fc = make_problem(Direction.FORWARD, 5, 4096, 1, 1, 4096, 1, 1)   # a classifier layer: ConvGemv1x1 applies
    ran = ["ConvDirectLocal", "ConvGemm1x1", "ConvGemv1x1"]
    assert "ConvGemv1x1" not in model.solvers
    expected = heuristic_model.rank_by_model(model, fc, heuristic.shape_rank(
        fc, [s for s in registry.ALL if s.id in ran]))[0].id
    assert heuristic_training.shipped_choice(model, fc, ran) == expected == "ConvGemv1x1"
    # the one record holding ConvGemv1x1 is held out (every layer in its own fold): it is still picked there
    records = {fc.key(): {"ConvGemv1x1": 0.035, "ConvDirectLocal": 0.245, "ConvGemm1x1": 0.42}, **synthetic(3, 12)}
    quality = heuristic_training.cross_validate(records, folds=len(records), rounds=5)
    assert all(case["problem"] != fc.key() for case in quality["worst_cases"] if case["ratio"] > 1.0)
