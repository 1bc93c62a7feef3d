"""The public names of fedfit.devices."""

import fedfit.devices as devices


def test_all_names_are_exported() -> None:
    assert sorted(devices.__all__) == sorted(
        [
            "CATALOGUES",
            "REALISTIC",
            "TIERS",
            "DeviceHistory",
            "DeviceTrace",
            "Monitor",
            "PsutilMonitor",
            "Registry",
            "TierBehaviour",
            "TraceMonitor",
            "TraceParams",
            "UpdateRecord",
            "catalogue",
            "generate_trace",
            "generate_traces",
            "load_csv_trace",
            "parse_csv_trace",
            "profile_from_mapping",
            "thermal_of",
            "tier",
            "with_consumption",
        ]
    )
    assert all(hasattr(devices, name) for name in devices.__all__)
