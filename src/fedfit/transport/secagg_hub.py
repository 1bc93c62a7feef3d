"""Deployed SecAgg at the server: cohorts of a round's tasks, their sessions, and their results.

A device that finished training advertises its keys (and its training report, no parameters)
for its task. When every task of that round still in flight has advertised, or
``phase_timeout_s`` after the first did, the advertised tasks are split into cohorts by the
master coordinates their plans cover, exactly as in simulation
(:func:`fedfit.security.secagg.cohorts.cohorts`: one cohort per width group of at least
``min_cohort``, smaller groups merged into a mixed one) and each cohort runs a
:class:`~fedfit.transport.secagg_session.Session`. When a cohort finishes, its unmasked sums go
to the round's :class:`~fedfit.security.secagg.private_sum.CohortSums` first, then each
survivor's task is delivered to the fleet as an update carrying only its report (its
parameters are the model it was sent: the server has nothing else) and every other member's
as a failure. A task that advertises after its round's cohorts formed fails (``deadline``).

Nothing of a session is durable: a server restarted mid-round cancels that round's tasks
(:func:`cancel_on_restart`) and the orchestrator runs the round again with fresh tasks; the
devices' requests for the old tasks are refused (409 ``secagg_unknown``) and they move on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from fedfit.aggregation import Contribution
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.security.secagg.cohorts import cohorts, fold, union
from fedfit.security.secagg.private_sum import CohortSums
from fedfit.transport.fleet import InFlight, NetworkFleet
from fedfit.transport.rejection import Rejected
from fedfit.transport.secagg_messages import KeysBody, RevealBody, SecAggStatus, SharesBody
from fedfit.transport.secagg_session import Member, Session
from fedfit.transport.secagg_vectors import slice_mask
from fedfit.transport.state import ServerState
from fedfit.types import Failure, FailureCause, Params, TaskCost, TaskResult, Update

#: (fleet, task, placeholder update, report, bytes, now) → the accepted task's result.
ResultOf = Callable[..., TaskResult]


class SecAggHub:
    """Every deployed SecAgg cohort of a run (thread-safe; the HTTP handlers call it).

    Args:
        fleet: the network fleet (tasks in flight, delivery of results).
        store: the task ledger.
        exchange: the run's sub-model exchange (plans → master coordinates).
        template: master-shaped parameters (names and shapes only).
        sums: where finished cohorts' sums go (the rule's combine takes them).
        threshold, min_cohort, timeout_s: the ``privacy.secure_aggregation`` settings.
        result_of: the coordinator's result of an accepted update.
    """

    def __init__(self, *, fleet: NetworkFleet, store: ServerState, exchange: SubModelExchange, template: Params,
                 sums: CohortSums, threshold: float, min_cohort: int, timeout_s: float, result_of: ResultOf) -> None:
        self.fleet, self.store, self.exchange, self.template, self.sums = fleet, store, exchange, template, sums
        self.threshold, self.min_cohort, self.timeout_s, self._result_of = threshold, min_cohort, timeout_s, result_of
        self._lock = threading.Lock()
        self._pending: dict[int, dict[str, Member]] = {}
        self._first: dict[int, float] = {}
        self._sessions: dict[str, Session] = {}
        self._formed: set[int] = set()
        self._ended: dict[str, Session] = {}  # finished sessions, so their members hear how it ended

    # -- requests ---------------------------------------------------------------------------------
    def advertise(self, device: int, task_id: str, body: KeysBody) -> SecAggStatus:
        self.fleet.heartbeat(device, None)  # every SecAgg request shows the device is alive
        with self._lock:
            task = self._task(device, task_id)
            r = task.plan.round
            if task_id in self._sessions or task_id in self._pending.get(r, {}):
                raise Rejected(409, "secagg_replay", f"secagg: task {task_id} already advertised its keys")
            if body.report.num_examples != self.fleet.num_examples(device):
                raise Rejected(422, "bad_count", f"report: num_examples {body.report.num_examples} != enrolled "
                                                 f"{self.fleet.num_examples(device)}")
            if r in self._formed:
                self._fail([(task_id, device)], FailureCause.DEADLINE, "too late for its round's secure aggregation")
                raise Rejected(409, "secagg_late", f"secagg: round {r}'s cohorts already formed")
            keys = (bytes.fromhex(body.c_key), bytes.fromhex(body.s_key))
            self._pending.setdefault(r, {})[task_id] = Member(task_id, device, body.report, keys)
            self._first.setdefault(r, self.fleet.clock.now())
            self._advance()
            return self._status(device, task_id)

    def status(self, device: int, task_id: str) -> SecAggStatus:
        self.fleet.heartbeat(device, None)
        with self._lock:
            self._advance()
            return self._status(device, task_id)

    def shares(self, device: int, task_id: str, body: SharesBody) -> None:
        self.fleet.heartbeat(device, None)
        with self._lock:
            self._session(task_id).shares(device, body)
            self._advance()

    def masked(self, device: int, task_id: str, body: bytes) -> None:
        self.fleet.heartbeat(device, None)
        with self._lock:
            self._session(task_id).masked(device, body)
            self._advance()

    def reveal(self, device: int, task_id: str, body: RevealBody) -> None:
        self.fleet.heartbeat(device, None)
        with self._lock:
            self._session(task_id).reveal(device, body)
            self._advance()

    # -- internals (lock held) --------------------------------------------------------------------
    def _task(self, device: int, task_id: str) -> InFlight:
        task = self.fleet.in_flight(task_id)
        if task is None:
            raise Rejected(409, "secagg_unknown", f"secagg: task {task_id[:40]!r} is not in flight")
        if task.plan.device_id != device:
            raise Rejected(403, "not_your_task", f"task {task_id}: issued to another device")
        return task

    def _session(self, task_id: str) -> Session:
        session = self._sessions.get(task_id)
        if session is None:
            raise Rejected(409, "secagg_unknown", f"secagg: task {task_id[:40]!r} is in no cohort")
        return session

    def _status(self, device: int, task_id: str) -> SecAggStatus:
        session = self._sessions.get(task_id) or self._ended.get(task_id)
        if session is not None:
            return session.status(device)
        if any(task_id in p for p in self._pending.values()):
            return SecAggStatus(phase="keys")
        raise Rejected(409, "secagg_unknown", f"secagg: task {task_id[:40]!r} is in no cohort")

    def _advance(self) -> None:
        now = self.fleet.clock.now()
        for r in list(self._pending):
            flying = {t.task_id for d in self.fleet.device_ids() if (t := self.fleet.task_for(d)) is not None
                      and t.plan.round == r and t.task_id not in self._sessions}
            if flying <= set(self._pending[r]) or now > self._first[r] + self.timeout_s:
                self._form(r, [m for m in self._pending.pop(r).values() if m.task_id in flying], now)
        for session in {id(s): s for s in self._sessions.values()}.values():
            if session.advance(now):
                self._finish(session)

    def _form(self, r: int, members: list[Member], now: float) -> None:
        self._formed.add(r)
        plans = {m.task_id: t.plan for m in members if (t := self.fleet.in_flight(m.task_id)) is not None}
        stand_ins = [Contribution(self.template, 1.0, slice_mask(self.exchange, plans[m.task_id], self.template))
                     for m in members]
        for indices, _ in cohorts(self.template, stand_ins, self.min_cohort) if members else []:
            group = {members[i].device: members[i] for i in indices}
            if len(group) < self.min_cohort:
                self._fail([(m.task_id, m.device) for m in group.values()], FailureCause.REJECTED,
                           f"secure aggregation: {len(group)} device(s) reached it, fewer than min_cohort "
                           f"{self.min_cohort}")
                continue
            session = Session(r, group, union(self.template, [stand_ins[i] for i in indices]), self.threshold, now,
                              self.timeout_s)
            self._sessions.update({m.task_id: session for m in group.values()})

    def _finish(self, session: Session) -> None:
        members = list(session.members.values())
        self._ended = {k: v for k, v in self._ended.items() if v.round >= session.round - 1}
        for m in members:
            self._sessions.pop(m.task_id, None)
            self._ended[m.task_id] = session
        if session.total is None:
            self._fail([(m.task_id, m.device) for m in members], FailureCause.OFFLINE,
                       f"secure aggregation aborted: {session.detail}")
            return
        if all(self.fleet.in_flight(m.task_id) is None for m in members):
            return  # the round closed without them (deadline): the sum would land in a later round
        num = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in self.template.items() if v.is_floating_point()}
        den = {n: torch.zeros_like(t) for n, t in num.items()}
        fold(num, den, session.total, session.coords, uniform=False)
        self.sums.add(session.round, num, den)
        for m in members:
            if m.device in session.server.alive:
                self._accept(m, session.length)
        self._fail([(m.task_id, m.device) for m in members if m.device not in session.server.alive],
                   FailureCause.OFFLINE, "dropped during secure aggregation (no masked input)")

    def _accept(self, m: Member, words: int) -> None:
        def outcome(t: InFlight, now: float) -> tuple[TaskResult, int | None]:
            self.store.set_status(t.task_id, "accepted", "secure aggregation")
            r = m.report
            update = Update(m.device, t.plan.round, t.sent, r.num_examples, r.samples_processed, r.steps,
                            r.micro_batch, r.accumulation_steps, r.train_loss, tuple(r.epoch_batches), None,
                            r.start_loss, r.sigma2, r.noise_curvature)
            return self._result_of(self.fleet, t, update, r, 8 * words, now), None
        self._deliver(m.task_id, outcome)

    def _fail(self, tasks: list[tuple[str, int]], cause: FailureCause, detail: str) -> None:
        for task_id, device in tasks:
            def outcome(t: InFlight, now: float, device: int = device) -> tuple[TaskResult, int | None]:
                self.store.set_status(t.task_id, "failed", detail)
                cost = TaskCost(0.0, 0.0, 0.0, 0.0, 0, len(t.payload), 0, 0.0)
                return TaskResult(t.plan, self.fleet.profile(device).tier, t.start_s, now,
                                  Failure(device, t.plan.round, cause, detail), cost, 0), None
            self._deliver(task_id, outcome)

    def _deliver(self, task_id: str, outcome: Callable[[InFlight, float], tuple[TaskResult, int | None]]) -> None:
        try:
            self.fleet.deliver(task_id, outcome)
        except StopIteration:  # the fleet already ended it (deadline, silent device)
            pass


def cancel_on_restart(store: ServerState) -> int:
    """Cancel every issued task (a restarted server has lost its SecAgg sessions); returns how many."""
    issued = store.tasks("issued")
    for task in issued:
        store.set_status(task.task_id, "cancelled", "server restarted during secure aggregation: round restarts")
    return len(issued)

