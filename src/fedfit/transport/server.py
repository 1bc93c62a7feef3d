"""``fedfit server``: the round loop in a thread, the HTTP app in uvicorn, all state under ``--state``.

``STATE/state.db`` (SQLite: devices, task ledger, update journal, committed versions),
``STATE/models/v<N>.safetensors`` (every model version, written atomically) and ``STATE/run/``
(the run directory ``fedfit run`` writes: config.yaml, metrics.jsonl, events.jsonl,
summary.json, plots, model). After each round the new model file is made durable first, then
its round is logged, then one SQLite transaction commits the version with the journal entries it
settled and the log sizes: a server killed at any moment restarts from the last committed
version, re-queues the journalled updates no version has settled, and takes back the tasks its
devices still hold.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

from safetensors.torch import load_file

from fedfit.config import ExperimentConfig
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import RoundOutcome, SyncState
from fedfit.report import RunDirectory, summarise
from fedfit.report.atomic import write_bytes
from fedfit.report.model_file import _spec_record, save_model
from fedfit.report.summary import report_record
from fedfit.report.run_dir import strict_json
from fedfit.data import build_federated_data
from fedfit.inputs import data_kwargs, initial_params
from fedfit.sources import model_spec, user_data
from fedfit.transport import secagg_setup
from fedfit.transport.assemble import Deployed, assemble, device_profile
from fedfit.transport.clock import WallClock
from fedfit.transport.codec import decode, encode, split_masks
from fedfit.transport.fleet import InFlight, NetworkFleet, Queued
from fedfit.transport.messages import ProfileReport, UpdateReport, plan_from_record
from fedfit.transport.service import ENERGY_SOURCE, Coordinator, Limits
from fedfit.transport.sqlite_state import SqliteState
from fedfit.transport.state import VersionCommit
from fedfit.types import Params, RoundReport, Update


class ServerRun:
    """One deployed run: its state directory, coordinator and round loop."""

    def __init__(self, config: ExperimentConfig, state_dir: Path, secret: str) -> None:
        self.config, self.dir = config, state_dir
        (state_dir / "models").mkdir(parents=True, exist_ok=True)
        self.store = SqliteState(state_dir / "state.db")
        progress = self.store.progress()
        self.clock = WallClock(progress.clock_s)
        d, o = config.deploy, config.orchestration
        self.coord = Coordinator(self.store, secret, config.num_devices,
                                 Limits(d.max_body_bytes, d.max_update_norm, o.max_staleness), self.clock.now)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        own = user_data(config, None)  # data.loader / data.devices_dir, else the built-in data set
        self.data = own if own is not None else build_federated_data(**data_kwargs(config))
        self.spec = model_spec(config, self.data, None)
        self.coord.config_body = {"config": config.model_dump(mode="json"), "spec": _spec_record(self.spec)}

    def model_path(self, version: int) -> Path:
        return self.dir / "models" / f"v{version}.safetensors"

    def run(self) -> None:
        """Wait for the fleet to enrol, then run (or resume) the rounds; records any error."""
        try:
            self._run()
        except BaseException as err:  # reported by the CLI as one line
            self.error = err
        finally:
            self.coord.finished = True

    def _wait_for_fleet(self) -> list[ProfileReport] | None:
        while not self.stop.is_set():
            records = self.store.devices()
            self.coord.status = {"state": "enrolling", "enrolled": len(records), "expected": self.config.num_devices}
            if len(records) >= self.config.num_devices:
                return [ProfileReport.model_validate_json(r.profile_json) for r in records]
            self.stop.wait(0.2)
        return None

    def _run(self) -> None:
        reports = self._wait_for_fleet()
        if reports is None:
            return
        d = self.config.deploy
        profiles = [device_profile(self.config, i, r) for i, r in enumerate(reports)]
        examples = [r.num_examples for r in reports]
        fleet = NetworkFleet(store=self.store, profiles=profiles, num_examples=examples, clock=self.clock,
                             task_timeout_s=d.task_timeout_s, heartbeat_timeout_s=d.heartbeat_timeout_s)
        dep = assemble(self.config, fleet, profiles, examples, self.data)
        secagg_setup.install(self.config, fleet, dep, self.coord)  # cancels tasks a SecAgg run left issued
        if not self.model_path(0).exists():
            write_bytes(self.model_path(0), encode(initial_params(self.config, dep.spec)))
        progress = self.store.progress()
        params = load_file(str(self.model_path(progress.version)))
        self._restore(fleet, dep, progress.version)
        self.coord.fleet = fleet
        fleet.wait_for_reports(d.heartbeat_timeout_s)
        history = [RoundReport(**json.loads(r)) for r in progress.reports]
        with RunDirectory(self.dir / "run", self.config.model_dump(mode="json"),
                          progress.log_bytes if progress.version else None) as out:
            params = self._rounds(fleet, dep, out, params, history, progress.version, progress.clock_s)
            fleet.cancel_pending()
            self._finish(dep, out, params, history)

    def _rounds(self, fleet: NetworkFleet, dep: Deployed, out: RunDirectory, params: Params,
                history: list[RoundReport], version: int, now_s: float) -> Params:
        orch, left = dep.orchestrator, self.config.orchestration.rounds - version
        rounds: Iterator[tuple[RoundOutcome, SyncState | AsyncState]]
        if isinstance(orch, AsyncOrchestrator):
            rounds = orch.run(AsyncState(params, version=version, now_s=now_s), left)
        else:
            rounds = orch.run(SyncState(params, round=version, now_s=now_s), left)
        for outcome, state in rounds:
            version += 1
            self._commit(fleet, out, outcome, state.params, version)
            history.append(outcome.report)
            params = state.params
            if self.stop.is_set():
                break
        return params

    def _commit(self, fleet: NetworkFleet, out: RunDirectory, outcome: RoundOutcome, params: Params,
                version: int) -> None:
        write_bytes(self.model_path(version), encode(params))
        out.log_round(outcome.report, outcome.results, {"rejected_requests": dict(self.coord.rejections),
                                                        "energy_source": ENERGY_SOURCE})
        applied, dropped = fleet.settled()
        record = strict_json(report_record(outcome.report))
        self.store.commit_version(VersionCommit(version, applied, dropped, self.clock.now(), out.log_bytes(), record))
        self.coord.version = version
        r = outcome.report
        self.coord.status = {"state": "running", "version": version, "accuracy": r.accuracy,
                             "participants_by_tier": r.participants_by_tier, "failures_by_cause": r.failures_by_cause,
                             "devices_by_tier": _by_tier(fleet), "devices_online": _online(fleet, self.clock.now()),
                             "wall_time_s": round(self.clock.now(), 2)}

    def _finish(self, dep: Deployed, out: RunDirectory, params: Params, history: list[RoundReport]) -> None:
        summary = summarise(history, self.config.evaluation.target_accuracy) | {"energy_source": ENERGY_SOURCE}
        save_model(out.path, dep.spec, params, dep.submodels.stats)
        if self.config.output.plots:
            out.plot(history, name=self.config.name, target=self.config.evaluation.target_accuracy)
        out.write_summary(summary)  # last: a directory holding it is a finished run
        self.coord.status = self.coord.status | {"state": "finished", "summary": summary}

    def _restore(self, fleet: NetworkFleet, dep: Deployed, version: int) -> None:
        """Re-queue journalled updates no version settled; take back tasks devices still hold."""
        queued = []
        for entry in self.store.journal(pending_only=True):
            task = self.store.task(entry.task_id)
            assert task is not None
            plan = plan_from_record(json.loads(task.plan_json))
            params, masks = split_masks(decode(entry.payload)[0])
            report = UpdateReport.model_validate_json(entry.report_json)
            update = Update(entry.device_id, entry.round, params, report.num_examples, report.samples_processed,
                            report.steps, report.micro_batch, report.accumulation_steps, report.train_loss,
                            tuple(report.epoch_batches), masks, report.start_loss, report.sigma2,
                            report.noise_curvature)
            flight = InFlight(task.task_id, plan, {}, b"", task.issued_s)
            queued.append(Queued(self.coord.result_of(fleet, flight, update, report, len(entry.payload),
                                                      entry.accepted_s), entry.seq))
        flying = []
        for task in self.store.tasks("issued"):
            plan = plan_from_record(json.loads(task.plan_json))
            if plan.round < version or not self.model_path(plan.round).exists():
                self.store.set_status(task.task_id, "cancelled", "server restarted after its round")
                continue
            sent = dep.submodels.outgoing(plan, load_file(str(self.model_path(plan.round))))
            flying.append(InFlight(task.task_id, plan, sent, encode(sent), self.clock.now()))
        fleet.restore(queued, flying)


def _online(fleet: NetworkFleet, now_s: float) -> int:
    return sum(fleet.snapshot(d, now_s).online for d in fleet.device_ids())


def _by_tier(fleet: NetworkFleet) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in fleet.device_ids():
        counts[fleet.profile(d).tier] = counts.get(fleet.profile(d).tier, 0) + 1
    return counts
