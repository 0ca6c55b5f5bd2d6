"""The find step: rank the applicable solvers of any family's problem, by benchmark, find DB or heuristic.

Find modes (argument ``mode`` or MIOPY_FIND_MODE): ``normal`` benchmarks every applicable solver;
``fast`` serves the find DB or else the heuristic ranking and never benchmarks; ``hybrid`` (the default)
serves the find DB or else benchmarks. MIOPY_FIND_ENFORCE: ``search`` tunes every applicable solver first,
``db_update`` re-benchmarks and overwrites the find record, ``db_clean`` drops the problem's perf and find
records (``search`` is miopy.tuning.find_after_search's: tuning sits above find, so callers that honour it
find through that).
Immediate mode (get_solutions, compile_solution) ranks and builds without running anything.

The problem's family is ``problem.registry`` (set by the family's registry module): its solvers, its
ranking for immediate mode, its float64 reference.

Failures are data: a solver that does not apply, needs too much workspace, fails to build or to launch
is recorded in ``FindResult.skipped`` with its reason and the search goes on. The timer is injectable:
``timer(handle, plan, buffers) -> ms``.

Accuracy check (on by default in normal and hybrid find; ``verify=False`` or MIOPY_FIND_VERIFY=0 turns it
off): before a candidate is timed it runs once on random inputs with its outputs poisoned (NaN), and its
outputs are compared with the expected ones, computed once per find: by the family's naive solver on the
device when it applies, else by the family's float64 reference on the host. A candidate whose hybrid error
exceeds its bound (miopy.accuracy.tolerance: dtype, math mode, reduction length, the solver's own bound;
plus the naive solver's own bound when it is the reference) is dropped: it appears in
``FindResult.rejected`` (and ``skipped``) with its error and is never ranked or stored in the find DB.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from . import config, db, find_compile_pool
from .accuracy import max_error
from .device import allocation_reason
from .errors import BadParam, MiopyError, NotSupported, check
from .handle import Handle
from .kernel_cache import KernelSpec
from .log import warn_once
from .plan import Operand, Plan, check_fits, checked_solution, solution_plan
from .solver import Params, Problem, Solver, ceil_div, run_scalars
from .tensor import FLOAT_BYTES, STRICT, DataType, as_int, strided_view
from .version import __version__

logger = logging.getLogger(__name__)

Timer = Callable[[Handle, Plan, Mapping[str, cl.Buffer]], float]
MODES = ("normal", "fast", "hybrid")
ENFORCE = ("search", "db_update", "db_clean")
DEFAULT = "default"


@dataclass(frozen=True)
class AlgoPerf:
    """One find record: a solver with its params, its time and workspace.

    measured is False for a heuristic or immediate-mode record, whose time_ms is nan (nothing ran).
    params_source says where params came from: "user perf DB", "system perf DB" or "default".
    math_mode is the math mode the record was measured (or chosen) under ("strict" or "tf32"; families
    without math modes are strict); problem_key names the dtype and, when not strict, the math mode.
    """

    solver_id: str
    algorithm: str
    time_ms: float
    workspace_bytes: int
    params: Params = field(hash=False)
    problem_key: str = ""
    params_source: str = DEFAULT
    measured: bool = True
    math_mode: str = STRICT
    max_error: float = math.nan   # hybrid error found by find's accuracy check (nan: not checked)

    def as_dict(self) -> dict:
        return {"solver_id": self.solver_id, "algorithm": self.algorithm, "time_ms": self.time_ms,
                "workspace_bytes": self.workspace_bytes, "params": self.params,
                "params_source": self.params_source, "measured": self.measured, "math_mode": self.math_mode,
                "max_error": self.max_error}


def math_mode_of(problem: Problem) -> str:
    """The problem's math mode ("strict" for families that have none)."""
    return getattr(problem, "math_mode", STRICT)


class FindResult(list):
    """Records best first; ``skipped`` maps solver id -> why it is not among them; ``rejected`` maps the
    ids the accuracy check dropped -> their error (they are in skipped too, with the bound); ``check`` says
    how outputs were checked ("ConvDirectNaive on the device", "float64 on the host") or why they were
    not; ``from_db`` is True when the ranking was served from the find DB (nothing was benchmarked)."""

    def __init__(self, records=(), skipped: dict[str, str] | None = None, from_db: bool = False,
                 rejected: dict[str, float] | None = None, check: str = "not checked"):
        super().__init__(records)
        self.skipped = dict(skipped or {})
        self.rejected = dict(rejected or {})
        self.check = check
        self.from_db = from_db


# Early stop: a candidate whose first timed run is this many times slower than the best so far is not
# timed further (its single-run time is its record): it cannot win, and slow candidates cost most to time.
EARLY_STOP_FACTOR = 3.0

# The host float64 reference is used only below this many multiply-adds (NumPy float64 ~ 1 GFLOP/s).
HOST_CHECK_MAX_FLOPS = 2e9
CHECK_SEED = 0   # random_buffers' seed: find's own buffers double as the check's inputs
ERROR_WG, ERROR_GROUPS = 256, 1024
# random_host draws at most this many values per tensor and repeats them: an odd length near 4M, far longer
# than any output's receptive field and sharing no factor with power-of-two strides
RANDOM_PERIOD = (1 << 22) + 15   # the device comparison's work-group size and its most work-groups


def error_kernel(dtype: DataType) -> KernelSpec:
    """The device comparison of find's accuracy check (kernels/check_error.cl) for outputs of dtype."""
    return KernelSpec.make("check_error.cl", "max_hybrid_error", {**dtype.defines, "WG": ERROR_WG})


class AccuracyCheck:
    """The expected outputs of one problem on random inputs, computed once per find, and each candidate's
    error against them (see the module docstring)."""

    def __init__(self, handle: Handle, problem: Problem, workspace_bytes: int):
        self.handle, self.problem = handle, problem
        check_fits(handle, {**tensor_bytes(problem), "workspace": workspace_bytes})
        self.host = random_host(problem, CHECK_SEED)
        self.buffers = upload(handle, problem, self.host, workspace_bytes)
        self.expected: dict[str, np.ndarray] | None = None
        self.expected_device: dict[str, cl.Buffer] = {}   # the naive solver's outputs, kept on the device
        self.reference_id: str | None = None   # the naive solver whose outputs are expected, if one
        self.reference_bound = 0.0               # its own bound against float64
        self.how = "not checked"

    def prepare(self) -> bool:
        """Compute the expected outputs (once); False when they cannot be had (self.how says why)."""
        if self.expected is None and self.how == "not checked":
            self.expected = self._from_naive()
            if self.expected is None:
                self.expected = self._from_host()
        return self.expected is not None

    def error_of(self, plan: Plan, solver: Solver) -> tuple[float, float]:
        """(max hybrid error of plan's outputs, the bound they must meet); prepare() must have succeeded."""
        assert self.expected is not None
        limit = self.problem.registry.tolerance(solver, self.problem) + self.reference_bound
        if solver.id == self.reference_id:
            return 0.0, limit
        if self.expected_device:
            self._enqueue_poisoned(plan)
            return max(self._device_error(role, want) for role, want in self.expected_device.items()), limit
        got = self._run(plan)
        return max(max_error(got[role], want) for role, want in self.expected.items()), limit

    def _device_error(self, role: str, want: cl.Buffer) -> float:
        """max_error of the candidate's output role against the reference's, reduced on the device (a big
        layer's outputs are hundreds of MB: reading them back and comparing in NumPy took seconds)."""
        desc = self.problem.tensors()[role]
        spec = error_kernel(desc.dtype)
        groups = max(1, min(ERROR_GROUPS, ceil_div(desc.element_span, ERROR_WG)))
        partial = self.handle.scratch("find-check-partial", FLOAT_BYTES * ERROR_GROUPS)
        self.handle.launch(self.handle.kernels.kernel(spec), (groups * ERROR_WG,), (ERROR_WG,),
                           (self.buffers[role], want, np.uint64(desc.element_span), partial))
        out = np.empty(groups, np.float32)
        cl.enqueue_copy(self.handle.queue, out, partial)
        return float(out.max())

    def _enqueue_poisoned(self, plan: Plan) -> None:
        enqueue_poisoned(self.handle, self.problem, plan, self.buffers)

    def _run(self, plan: Plan) -> dict[str, np.ndarray]:
        return run_poisoned(self.handle, self.problem, plan, self.buffers)

    def _from_naive(self) -> dict[str, np.ndarray] | None:
        try:
            found = naive_plan(self.handle, self.problem)
            if found is None:
                return None
            naive, plan = found
            if config.find_check_on_device():
                self._enqueue_poisoned(plan)
                tensors = self.problem.tensors()
                for role in self.problem.outputs():
                    copy = self.handle.alloc(tensors[role].nbytes)
                    cl.enqueue_copy(self.handle.queue, copy, self.buffers[role])
                    self.expected_device[role] = copy
                self.handle.finish()
                got = {}
            else:
                got = self._run(plan)
        except MiopyError as exc:
            self.expected_device = {}
            logger.info("find %s: the naive solver failed (%s); checking on the host", self.problem.key(), exc)
            return None
        self.reference_id, self.reference_bound = naive.id, self.problem.registry.tolerance(naive, self.problem)
        self.how = f"{naive.id} on the device"
        return {role: np.asarray(value, np.float64) for role, value in got.items()}

    def _from_host(self) -> dict[str, np.ndarray] | None:
        flops = getattr(self.problem, "flops", None)
        if flops is not None and flops() > HOST_CHECK_MAX_FLOPS:
            self.how = f"not checked: no naive solver ran and {flops():.2g} FLOPs is too much for the host reference"
            return None
        views = {role: strided_view(self.host[role], desc.dims, desc.strides)
                 for role, desc in self.problem.tensors().items()}
        self.how = "float64 on the host"
        return self.problem.registry.reference(self.problem, views)


def naive_solver(problem: Problem, info) -> Solver | None:
    """The family's naive solver where it applies to problem: the device-side reference of find's check and
    tuning's."""
    return next((s for s in problem.registry.ALL if s.algorithm == "naive" and s.is_applicable(problem, info)), None)


def naive_plan(handle: Handle, problem: Problem) -> tuple[Solver, Plan] | None:
    """The naive solver and its plan (default params) for problem; None where no naive solver applies. A plan
    that cannot be made raises (MiopyError), for the caller to fall back on the host."""
    naive = naive_solver(problem, handle.info)
    if naive is None:
        return None
    return naive, solution_plan(handle, problem, naive.id, naive.default_params(problem, handle.info))


def enqueue_poisoned(handle: Handle, problem: Problem, plan: Plan, buffers: Mapping[str, cl.Buffer]) -> None:
    """Enqueue plan once on buffers with its outputs poisoned first (NaN, so unwritten elements show), except
    those it updates in place (the problem's optional updated_roles(): running statistics, an RNG state)."""
    tensors = problem.tensors()
    updated: tuple[str, ...] = getattr(problem, "updated_roles", tuple)()
    for role in problem.outputs():
        if role in updated:
            continue
        nan = np.full(1, np.nan, tensors[role].dtype.numpy)
        cl.enqueue_fill_buffer(handle.queue, buffers[role], nan, 0, tensors[role].nbytes)
    plan.enqueue(buffers)


def run_poisoned(handle: Handle, problem: Problem, plan: Plan,
                 buffers: Mapping[str, cl.Buffer]) -> dict[str, np.ndarray]:
    """enqueue_poisoned, then the outputs on the host (logical views of their spans)."""
    enqueue_poisoned(handle, problem, plan, buffers)
    out = {}
    for role in problem.outputs():
        desc = problem.tensors()[role]
        flat = np.empty(desc.element_span, desc.dtype.numpy)
        cl.enqueue_copy(handle.queue, flat, buffers[role])
        out[role] = strided_view(flat, desc.dims, desc.strides)
    handle.finish()
    return out


def default_timer(handle: Handle, plan: Plan, buffers: Mapping[str, cl.Buffer]) -> float:
    """Median of 5 profiled runs after 2 warm-ups."""
    return handle.time_ms(lambda: plan.enqueue(buffers))


def random_host(problem: Problem, seed: int = 0) -> dict[str, np.ndarray]:
    """Random normal host data for every tensor of problem, flat over each descriptor's span (tensors longer
    than RANDOM_PERIOD repeat one block of it); roles the problem's optional positive_roles() names (an LRN
    backward's saved scale) get |normal| + 0.5, and the family's registry.prepare makes the rest valid (indices,
    masks)."""
    rng = np.random.default_rng(seed)
    positive = getattr(problem, "positive_roles", lambda: ())()
    out = {}
    for role, desc in problem.tensors().items():
        values = rng.standard_normal(min(desc.element_span, RANDOM_PERIOD), dtype=np.float32)
        if desc.element_span > RANDOM_PERIOD:   # repeat a long odd-length block: drawing 100M normals took 2 s
            values = np.resize(values, desc.element_span)
        out[role] = (np.abs(values) + 0.5 if role in positive else values).astype(desc.dtype.numpy, copy=False)
    prepare = problem.registry.prepare
    if prepare is not None:
        prepare(problem, out, rng)
    return out


def random_buffers(handle: Handle, problem: Problem, workspace_bytes: int, seed: int = CHECK_SEED) -> dict:
    """Device buffers for every tensor of problem (random normal values), a workspace and the problem's
    per-call scalars: what a plan of problem enqueues on."""
    check_fits(handle, {**tensor_bytes(problem), "workspace": workspace_bytes})
    return upload(handle, problem, random_host(problem, seed), workspace_bytes)


def upload(handle: Handle, problem: Problem, host: Mapping[str, np.ndarray], workspace_bytes: int) -> dict:
    """Device copies of host (role -> array), a workspace of workspace_bytes and problem's run_scalars: the
    bound arguments a plan of problem enqueues with."""
    out: dict = {}
    for role, array in host.items():
        out[role] = handle.alloc(array.nbytes)
        cl.enqueue_copy(handle.queue, out[role], array)
    out["workspace"] = handle.alloc(workspace_bytes)
    out.update(run_scalars(problem))
    return out


def tensor_bytes(problem: Problem) -> dict[str, int]:
    """Bytes of every tensor of problem, by role."""
    return {role: desc.nbytes for role, desc in problem.tensors().items()}


def params_for(solver: Solver, problem: Problem, handle: Handle) -> tuple[Params, str]:
    """The params find uses for solver, and their source: the user perf DB's, else the system perf DB's (their
    records of solver.tuned_as(problem)), else the default. A stored record that is no longer valid (grid or
    device limits changed) is skipped with one warning."""
    dev = handle.info
    owner, owned = solver.tuned_as(problem)
    key = owned.key()
    for perf in (db.user_perf_db(), db.system_perf_db()):
        record = perf.get(dev.device_id, key, owner.id)
        if record is None:
            continue
        reason = owner.invalid_reason(owned, record.params, dev)
        if reason is None:
            return dict(record.params), perf.label
        warn_once(logger, f"{perf.label}: params {record.params} of {owner.id} for {key} are invalid "
                          f"({reason}); ignoring them")
    return solver.default_params(problem, dev), DEFAULT


def resolve_mode(mode: str | None) -> str:
    """mode, else MIOPY_FIND_MODE, else hybrid; BadParam on an unknown name."""
    value = (mode or config.find_mode() or "hybrid").lower()
    if value not in MODES:
        raise BadParam("mode" if mode else "MIOPY_FIND_MODE", f"must be one of {MODES}, got {value!r}")
    return value


def resolve_enforce() -> str | None:
    """MIOPY_FIND_ENFORCE, or None; BadParam on an unknown name."""
    value = config.find_enforce()
    if value is not None and value.lower() not in ENFORCE:
        raise BadParam("MIOPY_FIND_ENFORCE", f"must be one of {ENFORCE}, got {value!r}")
    return value.lower() if value else None


def find_problem(handle: Handle, problem: Problem, *, buffers: Mapping[str, cl.Buffer] | None = None,
                 workspace_limit: int | None = None, timer: Timer | None = None, mode: str | None = None,
                 store: bool | None = None, solvers: Sequence[Solver] | None = None,
                 verify: bool | None = None) -> FindResult:
    """Rank the applicable solvers of problem, best first, as the find mode says (module docstring).

    buffers maps roles x, w, y, workspace to device buffers; random ones are made when omitted. A complete
    benchmark (no solver left out by workspace_limit or by MIOPY_FIND_ONLY_SOLVER / MIOPY_DISABLE_SOLVERS)
    is written to the find DB when store is True; store=None means only when no timer was injected.
    solvers restricts the search to those solvers (as miopy-driver -S does): then the find DB is neither
    read nor written. verify turns the accuracy check on or off (None: MIOPY_FIND_VERIFY, default on).
    Raises NotSupported when no solver succeeds.
    """
    _check_arguments(handle, problem, workspace_limit, solvers)
    checked = config.find_verify() if verify is None else bool(verify)
    if solvers is not None:
        return _benchmark(handle, problem, buffers, workspace_limit, timer, checked, solvers)
    mode, enforce = resolve_mode(mode), resolve_enforce()
    device, key = handle.info.device_id, problem.key()
    if enforce == "db_clean":
        db.forget_problem(device, key)
    if mode != "normal" and enforce is None:
        hit = _from_find_db(handle, problem, workspace_limit)
        if hit is not None:
            return hit
    if mode == "fast" and enforce in (None, "db_clean"):
        return _heuristic(handle, problem, workspace_limit)
    result = _benchmark(handle, problem, buffers, workspace_limit, timer, checked)
    wanted = store if store is not None else timer is None
    if wanted and enforce != "db_clean" and _complete(handle, problem, workspace_limit):
        db.find_db().put(device, key, [db.FindRecord(r.solver_id, r.algorithm, r.time_ms, r.workspace_bytes,
                                                     r.params) for r in result])
    return result


def _check_arguments(handle: Handle, problem: Problem, workspace_limit, solvers) -> None:
    """BadParam for a bad workspace_limit or solvers list; OutOfResources when the problem's tensors cannot
    be held by the device at all (before any random data is made or anything allocated)."""
    if workspace_limit is not None:
        check(as_int(workspace_limit, "workspace_limit") >= 0, "workspace_limit",
              f"must be >= 0 bytes, got {workspace_limit}")
    if solvers is not None:
        check(not isinstance(solvers, (str, bytes)) and isinstance(solvers, Sequence), "solvers",
              f"must be a sequence of Solver objects, got {type(solvers).__name__}")
        for solver in solvers:
            check(isinstance(solver, Solver), "solvers", f"expected Solver objects, got {solver!r}")
            problem.registry.get(solver.id)
    check_fits(handle, tensor_bytes(problem))


def get_solutions(handle: Handle, problem: Problem, workspace_limit: int | None = None) -> FindResult:
    """Immediate mode: the find DB's ranking (from_db=True), else the heuristic's; runs nothing."""
    _check_arguments(handle, problem, workspace_limit, None)
    hit = _from_find_db(handle, problem, workspace_limit)
    return hit if hit is not None else _heuristic(handle, problem, workspace_limit)


def immediate_plan(handle: Handle, problem: Problem, operands: Sequence[Operand], *, output: str | None = None,
                   may_alias: Sequence[tuple[str, str]] = ()) -> Plan:
    """The plan of the solution immediate mode picks for problem (the find DB's best, else the family's ranking,
    with perf-DB params), running on operands: what a family's call builds the first time it meets a problem.
    output is the operand alpha / beta blend into; may_alias the (written, read) pairs that may be one buffer."""
    record = get_solutions(handle, problem)[0]
    solution = checked_solution(handle, problem, record.solver_id, record.params)
    return Plan(handle, solution, operands, blend_output=output, may_alias=may_alias, problem=problem)


def compile_solution(handle: Handle, problem: Problem, solver_id: str) -> AlgoPerf:
    """Immediate mode: build solver_id's kernels for problem with its perf-DB params; the returned record
    runs through the convolution calls' ``algo`` with nothing left to compile."""
    record = _unmeasured(problem.registry.get(solver_id), problem, handle)
    solution_plan(handle, problem, solver_id, record.params)
    return record


def _candidates(handle: Handle, problem: Problem, workspace_limit: int | None,
                solvers: Sequence[Solver] | None = None) -> tuple[list[Solver], dict]:
    candidates, skipped = [], {}
    for solver in problem.registry.solvers() if solvers is None else solvers:
        reason = _skip_reason(solver, problem, handle, workspace_limit)
        if reason:
            skipped[solver.id] = reason
        else:
            candidates.append(solver)
    return candidates, skipped


def _benchmark(handle: Handle, problem: Problem, buffers, workspace_limit: int | None,
               timer: Timer | None, check: bool, solvers: Sequence[Solver] | None = None) -> FindResult:
    timer = timer or default_timer
    candidates, skipped = _candidates(handle, problem, workspace_limit, solvers)
    ws = max((s.workspace_bytes(problem) for s in candidates), default=0)
    checker = _checker(handle, problem, ws, buffers) if check else None
    if buffers is None:
        buffers = checker.buffers if checker is not None else random_buffers(handle, problem, ws)
    prebuild(handle, problem, candidates, with_reference=checker is not None)
    records: list[AlgoPerf] = []
    rejected: dict[str, float] = {}
    early = timer is default_timer
    for solver in problem.registry.rank(problem, candidates, handle.info) if early else candidates:
        best = min((r.time_ms for r in records), default=math.inf)
        timed = (lambda h, p, b, best=best: _early_stop_timer(h, p, b, best)) if early else timer
        record = _measure(solver, problem, handle, buffers, timed, skipped, checker, rejected)
        if record is not None:
            records.append(record)
    for sid, why in skipped.items():
        logger.info("find %s: skipped %s: %s", problem.key(), sid, why)
    if not records:
        raise NotSupported(f"no solver ran {problem.key()}: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    records.sort(key=lambda r: r.time_ms)
    how = checker.how if checker is not None else "not checked: the check is off"
    return FindResult(records, skipped, rejected=rejected, check=how)


def _early_stop_timer(handle: Handle, plan: Plan, buffers: Mapping[str, cl.Buffer], best: float) -> float:
    """default_timer, unless one run (after one warm-up) is already EARLY_STOP_FACTOR x best: then that run."""
    first = handle.time_ms(lambda: plan.enqueue(buffers), warmup=1, iters=1)
    if first > EARLY_STOP_FACTOR * best:
        return first
    return default_timer(handle, plan, buffers)


def find_specs(handle: Handle, problem: Problem, candidates: Sequence[Solver],
               with_reference: bool = False) -> dict[KernelSpec, str]:
    """Every kernel a find of problem builds, with the solver it is for: each candidate's (perf-DB or default
    params), and with_reference the naive reference's and the device-side check's ("check"). A candidate
    whose solution cannot be made is left out (its own build reports why)."""
    solvers = list(candidates)
    if with_reference:
        naive = naive_solver(problem, handle.info)
        solvers += [naive] if naive is not None and naive not in solvers else []
    specs: dict[KernelSpec, str] = {}
    for solver in solvers:
        params = solver.default_params(problem, handle.info) if solver not in candidates else \
            params_for(solver, problem, handle)[0]
        try:
            solution = checked_solution(handle, problem, solver.id, params)
        except MiopyError:
            continue
        specs.update({launch.spec: solver.id for launch in solution.launches})
    if with_reference and config.find_check_on_device():
        tensors = problem.tensors()
        specs.update({error_kernel(tensors[role].dtype): "check" for role in problem.outputs()})
    return specs


def prebuild(handle: Handle, problem: Problem, candidates: Sequence[Solver], with_reference: bool = False) -> None:
    """Compile the kernels of every candidate (and of the naive reference) not yet built, in
    config.find_jobs() threads (the OpenCL compiler runs with the GIL released, so a cold find waits for
    its slowest compile rather than for the sum) or, where the driver compiles one program at a time per
    process (NVIDIA), in as many helper processes (miopy.find_compile_pool). Failures are left for the
    candidate's own build to report."""
    jobs = config.find_jobs()
    cold = [spec for spec in find_specs(handle, problem, candidates, with_reference) if not _is_built(handle, spec)]
    if jobs < 2 or len(cold) < 2:
        return
    if find_compile_pool.wanted(handle):
        find_compile_pool.pool_for(handle, jobs).build(cold)
        return
    with cf.ThreadPoolExecutor(min(jobs, len(cold)), thread_name_prefix="miopy-find-compile") as pool:
        for future in [pool.submit(handle.kernels.kernel, spec) for spec in cold]:
            try:
                future.result()
            except Exception as exc:  # failures are data: the candidate's build reports them
                logger.debug("find %s: prebuild failed: %s", problem.key(), exc)


def _is_built(handle: Handle, spec: KernelSpec) -> bool:
    """Whether spec's program is built; a source that cannot be read counts as not built (its candidate's own
    build reports the error and find skips that candidate)."""
    try:
        return handle.kernels.is_built(spec)
    except MiopyError:
        return False


def _checker(handle: Handle, problem: Problem, workspace_bytes: int, buffers) -> AccuracyCheck | None:
    """find's accuracy check, with its own random buffers (also timed on when the caller gave none); None,
    logged, when they cannot be allocated next to the caller's."""
    try:
        return AccuracyCheck(handle, problem, workspace_bytes)
    except MiopyError as exc:
        if buffers is None:
            raise
        logger.info("find %s: no room for the accuracy check's buffers (%s); not checking", problem.key(), exc)
        return None


def _complete(handle: Handle, problem: Problem, workspace_limit: int | None) -> bool:
    """Whether a benchmark considered every solver: none filtered out by the environment or the limit."""
    if config.find_only_solver() or config.disabled_solvers():
        return False
    return workspace_limit is None or all(s.workspace_bytes(problem) <= workspace_limit
                                          for s in problem.registry.solvers()
                                          if s.is_applicable(problem, handle.info))


def _from_find_db(handle: Handle, problem: Problem, workspace_limit: int | None) -> FindResult | None:
    """The find DB's ranking (the user's, else the one shipped in the system DB) while it is current: made
    by this miopy version, naming known solvers that still apply, with the params the perf DBs give now (a
    retuned solver makes the ranking stale); a shipped ranking must also name every candidate (it may
    predate a solver added since)."""
    stored, shipped = db.find_db().get(handle.info.device_id, problem.key()), False
    if not stored:
        stored, shipped = db.system_find_db().get(handle.info.device_id, problem.key()), True
    if not stored or any(r.miopy_version != __version__ for r in stored):
        return None
    allowed = {s.id: s for s in problem.registry.solvers()}
    known = {s.id for s in problem.registry.ALL}
    records = []
    for entry in stored:
        solver = allowed.get(entry.solver_id)
        if entry.solver_id not in known or (solver is not None and not solver.is_applicable(problem, handle.info)):
            return None
        if solver is None or (workspace_limit is not None and entry.workspace_bytes > workspace_limit):
            continue
        invalid = solver.invalid_reason(problem, entry.params, handle.info)
        if invalid is not None:  # this version wrote valid params: the record was damaged
            warn_once(logger, f"find DB: params {entry.params} of {solver.id} for {problem.key()} are invalid "
                              f"({invalid}); finding again")
            return None
        params, source = params_for(solver, problem, handle)
        if params != entry.params:
            return None
        records.append(AlgoPerf(solver.id, solver.algorithm, entry.time_ms, solver.workspace_bytes(problem),
                                params, problem.key(), source, math_mode=math_mode_of(problem)))
    if not records:
        return None
    candidates, skipped = _candidates(handle, problem, workspace_limit)
    ranked = {r.solver_id for r in stored}
    if shipped and any(s.id not in ranked for s in candidates):
        return None   # a shipped record predates a solver that applies now: find it here instead
    skipped.update({s.id: "failed when the find DB record was made" for s in allowed.values()
                    if s.id not in ranked and s.id not in skipped})
    return FindResult(records, skipped, from_db=True)


def _heuristic(handle: Handle, problem: Problem, workspace_limit: int | None) -> FindResult:
    """Applicable solvers in the heuristic's order with their perf-DB params; nothing compiled or run."""
    candidates, skipped = _candidates(handle, problem, workspace_limit)
    if not candidates:
        reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items())
        raise NotSupported(f"no solver applies to {problem.key()}: {reasons}")
    logger.info("find %s: heuristic ranking", problem.key())
    ranked = problem.registry.rank(problem, candidates, handle.info)
    return FindResult([_unmeasured(s, problem, handle) for s in ranked], skipped)


def _unmeasured(solver: Solver, problem: Problem, handle: Handle) -> AlgoPerf:
    params, source = params_for(solver, problem, handle)
    return AlgoPerf(solver.id, solver.algorithm, math.nan, solver.workspace_bytes(problem), dict(params),
                    problem.key(), source, measured=False, math_mode=math_mode_of(problem))


def _skip_reason(solver: Solver, problem: Problem, handle: Handle, workspace_limit: int | None) -> str | None:
    reason = solver.not_applicable_reason(problem, handle.info)
    if reason is None and workspace_limit is not None and solver.workspace_bytes(problem) > workspace_limit:
        reason = f"needs {solver.workspace_bytes(problem)} bytes of workspace, limit is {workspace_limit}"
    if reason is None and solver.workspace_bytes(problem):
        reason = allocation_reason(handle.info, {**tensor_bytes(problem), "workspace": solver.workspace_bytes(problem)})
    return reason


def _measure(solver: Solver, problem: Problem, handle: Handle, buffers, timer: Timer,
             skipped: dict[str, str], checker: AccuracyCheck | None, rejected: dict[str, float]) -> AlgoPerf | None:
    """Build, check and time one candidate; None (with the reason in skipped) when it fails or is wrong."""
    params, source = params_for(solver, problem, handle)
    error = math.nan
    try:
        plan = solution_plan(handle, problem, solver.id, params)
        if checker is not None and checker.prepare():
            error, limit = checker.error_of(plan, solver)
            if not error <= limit:
                rejected[solver.id] = error
                skipped[solver.id] = f"wrong result: max error {error:.3g} > tolerance {limit:.2g} ({checker.how})"
                logger.warning("find %s: %s rejected: %s", problem.key(), solver.id, skipped[solver.id])
                return None
        time_ms = timer(handle, plan, buffers)
    except MiopyError as exc:
        skipped[solver.id] = f"{type(exc).__name__}: {exc}"
        return None
    if not isinstance(time_ms, (int, float, np.integer, np.floating)) or isinstance(time_ms, bool) or not time_ms >= 0:
        skipped[solver.id] = f"the timer returned {time_ms!r}, not a time in ms"
        return None
    return AlgoPerf(solver.id, solver.algorithm, float(time_ms), solver.workspace_bytes(problem),
                    dict(params), problem.key(), source, math_mode=math_mode_of(problem), max_error=error)
