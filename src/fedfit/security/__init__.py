"""Security and privacy: simulated attacks, DP-FedAvg with its accountant, secure aggregation.

Robust aggregation rules live with the other rules in :mod:`fedfit.aggregation.robust`.
"""
