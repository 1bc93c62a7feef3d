"""Real deployment over HTTP: ``fedfit server`` and ``fedfit device``.

The wire format (:mod:`~fedfit.transport.messages`, :mod:`~fedfit.transport.codec`), the
server's durable state (:mod:`~fedfit.transport.state`, :mod:`~fedfit.transport.sqlite_state`),
the :class:`~fedfit.transport.fleet.NetworkFleet` the orchestrator drives, the request handling
(:mod:`~fedfit.transport.service`, :mod:`~fedfit.transport.app`), the server run
(:mod:`~fedfit.transport.server`) and the device (:mod:`~fedfit.transport.client`,
:mod:`~fedfit.transport.device`).
"""
