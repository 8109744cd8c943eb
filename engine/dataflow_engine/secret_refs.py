"""Values a job takes from a Kubernetes Secret by reference, as a container's ``env`` does.

A connector's ``properties`` and ``spec.sparkConf`` accept ``{secretKeyRef: {name, key}}``
wherever a string goes. The spec, the plan, ConfigMaps, the status and checkpoints carry the
reference only; the value is read where it is used (:mod:`dataflow_engine.runtime.secrets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from pydantic import BaseModel, ConfigDict, Field

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
