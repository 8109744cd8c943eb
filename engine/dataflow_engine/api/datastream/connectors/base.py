"""PyFlink's ``pyflink.datastream.connectors.base``: the bases of sources and sinks, and the
delivery guarantee sinks give."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.sinks import DeliveryGuarantee, Sink


class Source(ABC):
    """Base of the sources ``env.from_source`` takes: each describes a source operator of the
    spec, which the runtime builds, so a source is the same from Python and from a manifest."""

    @abstractmethod
    def spec_args(self) -> dict[str, Any]:
        """The source operator's ``args`` in the spec."""


StreamTransformer = refused("pyflink.datastream.connectors.base.StreamTransformer")
SupportsPreprocessing = refused("pyflink.datastream.connectors.base.SupportsPreprocessing")

__all__ = ["DeliveryGuarantee", "Sink", "Source", "StreamTransformer", "SupportsPreprocessing"]
