"""Values a job takes from a Kubernetes Secret by reference, as a container's ``env`` does.

A connector's ``properties`` and ``spec.sparkConf`` accept ``{secretKeyRef: {name, key}}``
wherever a string goes. The spec, the plan, ConfigMaps, the status and checkpoints carry the
reference only; the value is read where it is used (:mod:`dataflow_engine.runtime.secrets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from dataflow_engine.spec.model import DataflowJobSpec

#: A Secret's name (a DNS subdomain) and a key of its data.
SECRET_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]{1,253}$"


class SecretKeySelector(BaseModel):
    """One key of a Secret in the job's namespace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=SECRET_NAME_PATTERN, description="The Secret's name.")
    key: str = Field(pattern=SECRET_KEY_PATTERN, description="The key in the Secret's data.")


class SecretKeySource(BaseModel):
    """A value read from a Secret: ``{secretKeyRef: {name, key}}``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    secret_key_ref: SecretKeySelector = Field(alias="secretKeyRef")

    def __repr__(self) -> str:
        return f"secretKeyRef({self.secret_key_ref.name}/{self.secret_key_ref.key})"


#: A setting given as itself or by reference to a Secret.
SettingValue = str | SecretKeySource


def secret_keys(values: Iterable[SettingValue]) -> Iterator[SecretKeySelector]:
    for value in values:
        if isinstance(value, SecretKeySource):
            yield value.secret_key_ref


def plain(settings: Mapping[str, SettingValue]) -> dict[str, str]:
    """The settings given as themselves (what may be written to a file)."""
    return {key: value for key, value in settings.items() if isinstance(value, str)}


def job_secret_keys(spec: DataflowJobSpec) -> list[SecretKeySelector]:
    """Every Secret key a job references: in spec.sparkConf, and in its operators' connector
    properties (``args.properties``, validated by the operator catalog)."""
    refs = list(secret_keys(spec.spark_conf.values()))
    for op in spec.pipeline:
        properties = (op.args or {}).get("properties")
        if isinstance(properties, Mapping):
            refs += secret_keys(SecretKeySource.model_validate(value)
                                for value in properties.values() if isinstance(value, Mapping))
    return sorted(set(refs), key=lambda ref: (ref.name, ref.key))


def secret_keys_by_name(spec: DataflowJobSpec) -> dict[str, list[str]]:
    """The job's referenced keys grouped by Secret, as a pod mounts them (one volume a Secret)."""
    keys: dict[str, list[str]] = {}
    for ref in job_secret_keys(spec):
        keys.setdefault(ref.name, []).append(ref.key)
    return keys
