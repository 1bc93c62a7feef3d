"""Reports: metrics and event logs, summaries, plots."""

from fedfit.report.plots import plot_accuracy, plot_failures, plot_participation
from fedfit.report.run_dir import RunDirectory
from fedfit.report.summary import event_record, report_record, summarise, time_to_target
from fedfit.report.tiers import local_accuracy_by_tier, worst_tier_gap

__all__ = ["RunDirectory", "event_record", "local_accuracy_by_tier", "plot_accuracy", "plot_failures",
           "plot_participation", "report_record", "summarise", "time_to_target", "worst_tier_gap"]
