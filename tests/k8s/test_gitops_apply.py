"""GitOps re-applies: an unchanged manifest is no change, with client- and server-side apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube_helpers import Kube

pytestmark = pytest.mark.k8s
REPO_ROOT = Path(__file__).resolve().parents[2]

#: Every place where the CRD could fill in a default: a slot sharing group without cpu or
#: memory, operators without chaining flags, top-level fields left out.
DEFAULTS_EVERYWHERE = """
apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {name: defaults}
spec:
  slotSharingGroups: [{name: heavy}]
  pipeline:
    - {name: src, type: sequence, args: {from: 1, to: 10}}
    - {name: double, type: map, function: square, inputs: [src], slotSharingGroup: heavy}
    - {name: out, type: print, inputs: [{from: double, partitioning: rebalance}]}
"""


@pytest.mark.parametrize("manifest", [
    "defaults-everywhere", *sorted(p.name for p in (REPO_ROOT / "examples").glob("*.yaml"))])
def test_reapplying_an_unchanged_manifest_changes_nothing(kube: Kube, namespace: str, crd: None,
                                                          manifest: str) -> None:
    text = (DEFAULTS_EVERYWHERE if manifest == "defaults-everywhere"
            else (REPO_ROOT / "examples" / manifest).read_text())
    first = kube.kubectl("apply", "-n", namespace, "-f", "-", input=text)
    assert "created" in first.stdout
    again = kube.kubectl("apply", "-n", namespace, "-f", "-", input=text)
    assert "unchanged" in again.stdout, again.stdout
    assert kube.kubectl("diff", "-n", namespace, "-f", "-", input=text,
                        check=False).returncode == 0

    # Server-side apply (Argo CD, Flux) takes over the same object and sees no drift either.
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-n", namespace, "-f", "-",
                 input=text)
    drift = kube.kubectl("diff", "--server-side", "-n", namespace, "-f", "-", input=text,
                         check=False)
    assert drift.returncode == 0, drift.stdout
