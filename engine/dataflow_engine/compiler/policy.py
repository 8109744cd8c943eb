"""What a job's author may ask for: checks of pod templates, Spark settings, images and
function references.

A DataflowJob's author is not trusted with the operator's rights. Nothing in a job may change
where, or as whom, its pods run, nor weaken them below the ``restricted`` Pod Security Standard
(whatever the namespace enforces), nor name a function of a module that runs commands or reaches
into the process (``os:system``). The checks read plain dicts, so ``dataflow compile`` and the
operator run the same ones, and the engine stays free of Kubernetes. The deny-list is a guard
against referencing such functions directly, not a sandbox: user code runs as the pod's user.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.functions.references import is_function_ref
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_engine.spec.secret_refs import SettingValue
from dataflow_engine.spec.spark_properties import key_problem, qualified_suffix, value_problem

#: Modules whose callables a job may not name (``--denied-modules`` replaces the list).
DEFAULT_DENIED_MODULES = frozenset({
    "os", "posix", "nt", "subprocess", "_posixsubprocess", "builtins", "shutil", "socket",
    "importlib", "pty", "sys", "ctypes", "multiprocessing", "runpy", "code", "codeop", "pickle",
    "marshal", "signal", "pdb", "tempfile", "pathlib", "io", "glob", "asyncio", "threading",
    "http", "urllib", "ftplib", "smtplib", "webbrowser", "pyspark", "py4j",
    # Callables that run code given as a string (cProfile:run, timeit:timeit,
    # yaml:unsafe_load), load objects, or reach the network or the API server.
    "cProfile", "profile", "trace", "timeit", "doctest", "yaml", "dill", "cloudpickle",
    "_pickle", "copyreg", "shelve", "dbm", "zipimport", "pkgutil", "compileall", "py_compile",
    "venv", "ensurepip", "pip", "setuptools", "distutils", "_thread", "_io", "fcntl",
    "resource", "mmap", "xmlrpc", "socketserver", "requests", "urllib3", "aiohttp",
    "kubernetes", "kopf", "dataflow_operator",
})


@dataclass(frozen=True)
class JobPolicy:
    """What the operator lets jobs choose; the defaults are the strict ones."""

    denied_modules: frozenset[str] = DEFAULT_DENIED_MODULES
    #: Image prefixes a job may name (spec.image, Spark's image settings); empty: none.
    allowed_images: tuple[str, ...] = ()
    #: Service accounts (names in the job's namespace) a job may run its pods as.
    allowed_service_accounts: frozenset[str] = frozenset()
    #: Tolerations of every taint and placement on control-plane nodes (--allow-control-plane).
    allow_control_plane: bool = False
    #: Bounds on one job, so that no accepted job can exhaust the operator or etcd.
    max_operators: int = 500
    max_execution_vertices: int = 20_000
    #: A spec larger than this (as JSON) leaves too little of etcd's object limit to status.
    max_spec_bytes: int = 128 * 1024


#: The operator's default: strict.
STRICT = JobPolicy()

#: The containers the operator builds, in the driver's and the executor's pod: their command,
#: arguments and hooks are the operator's.
OPERATOR_CONTAINERS = {"driver": "driver", "executor": "executor"}
OWNED_CONTAINER_FIELDS = ("command", "args", "lifecycle", "workingDir")
#: Environment variables that configure Spark and the runner in the operator's containers.
OWNED_ENV_PREFIXES = ("SPARK_", "PYSPARK_", "DATAFLOW_", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")
#: The operator's volumes are named with this prefix; what it mounts lives below these paths.
OWNED_VOLUME_PREFIX = "dataflow-"
OWNED_MOUNT_PATHS = ("/etc/dataflow", "/etc/dataflow-requirements", "/etc/dataflow-secrets",
                     "/opt/dataflow", "/opt/spark/conf", "/var/run/secrets")
#: Node labels and taints that mark the control plane.
CONTROL_PLANE_KEYS = frozenset({"node-role.kubernetes.io/control-plane",
                                "node-role.kubernetes.io/master"})
#: Annotations through which a pod's confinement is chosen (the field's older spelling).
CONFINEMENT_ANNOTATION_PREFIXES = ("container.apparmor.security.beta.kubernetes.io/",
                                   "seccomp.security.alpha.kubernetes.io/",
                                   "container.seccomp.security.alpha.kubernetes.io/")

#: Labels and annotations the operator and Spark own on the pods.
OWNED_LABEL_PREFIXES = ("dataflow.io/", "spark-")
OWNED_LABELS = frozenset({"app.kubernetes.io/name", "app.kubernetes.io/instance",
                          "app.kubernetes.io/component", "app.kubernetes.io/managed-by"})
OWNED_ANNOTATIONS = frozenset({"dataflow.io/restart"})
#: Pod fields that decide where and as whom a pod runs, and what it owns.
OWNED_METADATA = ("name", "generateName", "namespace", "ownerReferences", "finalizers")
OWNED_SPEC = ("serviceAccountName", "serviceAccount", "automountServiceAccountToken",
              "nodeName", "schedulerName", "priorityClassName", "runtimeClassName")
#: Volume types the ``restricted`` standard allows (Secrets are refused separately).
RESTRICTED_VOLUME_TYPES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                     "persistentVolumeClaim", "projected", "secret"})
#: Projected sources without credentials (no ``secret``, no ``serviceAccountToken``).
ALLOWED_PROJECTIONS = frozenset({"configMap", "downwardAPI", "clusterTrustBundle"})
#: The baseline standard's safe sysctls.
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
})
ALLOWED_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t",
                                   "container_engine_t"})
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

#: Spark settings that decide where and as whom pods run, or what they mount: the operator's.
OWNED_SPARK_KEYS = frozenset({
    "spark.master", "spark.submit.deployMode", "spark.kubernetes.namespace",
    "spark.kubernetes.driver.pod.name", "spark.kubernetes.executor.podTemplateFile",
    "spark.kubernetes.driver.podTemplateFile", "spark.kubernetes.executor.podTemplateContainerName",
    "spark.kubernetes.driver.podTemplateContainerName", "spark.kubernetes.executor.podNamePrefix",
    "spark.kubernetes.executor.pod.featureSteps", "spark.kubernetes.driver.pod.featureSteps",
    "spark.kubernetes.scheduler.name", "spark.kubernetes.executor.scheduler.name",
    "spark.kubernetes.driver.scheduler.name", "spark.driver.host", "spark.driver.bindAddress",
    "spark.driver.port", "spark.driver.blockManager.port", "spark.kubernetes.hadoop.configMapName",
    "spark.kubernetes.kerberos.tokenSecret.name", "spark.kubernetes.kerberos.tokenSecret.itemKey",
    "spark.kubernetes.kerberos.krb5.configMapName", "spark.kubernetes.kerberos.krb5.path",
    "spark.kubernetes.driver.master", "spark.kubernetes.context",
    "spark.kubernetes.trust.certificates", "spark.kubernetes.executor.disableConfigMap",
})
OWNED_SPARK_PREFIXES = (
    "spark.kubernetes.authenticate.",
    "spark.kubernetes.driver.volumes.", "spark.kubernetes.executor.volumes.",
    "spark.kubernetes.driver.secrets.", "spark.kubernetes.executor.secrets.",
    "spark.kubernetes.driver.secretKeyRef.", "spark.kubernetes.executor.secretKeyRef.",
    "spark.dataflow.",
)
IMAGE_SPARK_KEYS = frozenset({"spark.kubernetes.container.image",
                              "spark.kubernetes.driver.container.image",
                              "spark.kubernetes.executor.container.image"})


def _owned_key(key: str) -> bool:
    return key.startswith(OWNED_LABEL_PREFIXES) or key in OWNED_LABELS


def template_problems(template: Mapping[str, Any], path: str, role: str,
                      policy: JobPolicy = STRICT) -> Iterator[SpecProblem]:
    """Everything a user's pod template of `role` (driver, executor) may not set, each with
    its field path."""
    yield from _null_problems(template, path)
    metadata = template.get("metadata") or {}
    for field in OWNED_METADATA:
        if field in metadata:
            yield SpecProblem(f"{path}.metadata.{field}", "set by the operator; a template may "
                              "not change what the operator owns")
    for key in metadata.get("labels") or {}:
        yield from _label_problems(key, f"{path}.metadata.labels.{key}")
    for key, value in (metadata.get("annotations") or {}).items():
        yield from _annotation_problems(key, value, f"{path}.metadata.annotations.{key}")
    spec = template.get("spec") or {}
    for field in OWNED_SPEC:
        if field in spec:
            yield SpecProblem(f"{path}.spec.{field}", "set by the operator; a template may not "
                              "change where or as whom the pod runs")
    yield from _operator_container_problems(spec, f"{path}.spec", OPERATOR_CONTAINERS[role])
    yield from _credential_problems(spec, f"{path}.spec")
    yield from restricted_problems(spec, f"{path}.spec")
    if not policy.allow_control_plane:
        yield from _placement_problems(spec, f"{path}.spec")


def _null_problems(value: Any, at: str) -> Iterator[SpecProblem]:
    """An explicit null would remove what the operator set (server-side apply keeps nulls)."""
    if value is None:
        yield SpecProblem(at, "null is not allowed here: leave the field out instead")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _null_problems(item, f"{at}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _null_problems(item, f"{at}[{i}]")


def _label_problems(key: str, at: str) -> Iterator[SpecProblem]:
    if _owned_key(key):
        yield SpecProblem(at, "this label belongs to the operator or Spark")


def _annotation_problems(key: str, value: Any, at: str) -> Iterator[SpecProblem]:
    if key in OWNED_ANNOTATIONS:
        yield SpecProblem(at, "this annotation belongs to the operator")
    elif key.startswith(CONFINEMENT_ANNOTATION_PREFIXES) and not (
            value in ("runtime/default", "docker/default")
            or str(value).startswith("localhost/")):
        yield SpecProblem(at, "AppArmor and seccomp may only be runtime/default or localhost/*")


def _control_plane_problems(key: str, at: str) -> Iterator[SpecProblem]:
    if key in CONTROL_PLANE_KEYS:
        yield SpecProblem(at, "pods may not be placed on control-plane nodes unless the "
                          "operator allows it (--allow-control-plane)")


def _placement_problems(spec: Mapping[str, Any], at: str) -> Iterator[SpecProblem]:
    """Tolerating every taint, or choosing control-plane nodes, moves a job where the admin
    keeps what jobs must not share."""
    for key in spec.get("nodeSelector") or {}:
        yield from _control_plane_problems(key, f"{at}.nodeSelector.{key}")
    for i, toleration in enumerate(spec.get("tolerations") or []):
        toleration = toleration or {}
        if not toleration.get("key") and toleration.get("operator") == "Exists":
            yield SpecProblem(f"{at}.tolerations[{i}]", "a toleration of every taint is not "
                              "allowed unless the operator allows it (--allow-control-plane)")
        yield from _control_plane_problems(toleration.get("key") or "",
                                          f"{at}.tolerations[{i}].key")
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    terms = [(f"requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", term)
             for i, term in enumerate(required.get("nodeSelectorTerms") or [])]
    terms += [(f"preferredDuringSchedulingIgnoredDuringExecution[{i}].preference",
               (item or {}).get("preference")) for i, item in enumerate(preferred)]
    for where, term in terms:
        for j, expression in enumerate((term or {}).get("matchExpressions") or []):
            yield from _control_plane_problems(
                (expression or {}).get("key") or "",
                f"{at}.affinity.nodeAffinity.{where}.matchExpressions[{j}].key")


def _operator_container_problems(spec: Mapping[str, Any], at: str,
                                 container_name: str) -> Iterator[SpecProblem]:
    """The operator's container runs the operator's command with the operator's files; a
    template may add to it (resources, environment, mounts of its own), not replace them."""
    for kind in CONTAINER_LISTS:
        for i, container in enumerate(spec.get(kind) or []):
            container = container or {}
            where = f"{at}.{kind}[{i}]"
            if kind == "containers" and container.get("name") == container_name:
                for field in OWNED_CONTAINER_FIELDS:
                    if field in container:
                        yield SpecProblem(f"{where}.{field}", "set by the operator; a template "
                                          f"may not change the {container_name} container's "
                                          f"{field}")
                for j, env in enumerate(container.get("env") or []):
                    if str((env or {}).get("name", "")).startswith(OWNED_ENV_PREFIXES):
                        yield SpecProblem(f"{where}.env[{j}].name", "variables starting with "
                                          f"{', '.join(OWNED_ENV_PREFIXES)} configure Spark "
                                          "and the runner: set by the operator")
            for j, mount in enumerate(container.get("volumeMounts") or []):
                mount = mount or {}
                path = str(mount.get("mountPath", "")).rstrip("/") + "/"
                if str(mount.get("name", "")).startswith(OWNED_VOLUME_PREFIX) or any(
                        path.startswith(owned + "/") for owned in OWNED_MOUNT_PATHS):
                    yield SpecProblem(f"{where}.volumeMounts[{j}]", "the operator's volumes "
                                      f"({OWNED_VOLUME_PREFIX}*) and paths "
                                      f"({', '.join(OWNED_MOUNT_PATHS)}) are the operator's")
    for i, volume in enumerate(spec.get("volumes") or []):
        if str((volume or {}).get("name", "")).startswith(OWNED_VOLUME_PREFIX):
            yield SpecProblem(f"{at}.volumes[{i}].name", f"volumes named {OWNED_VOLUME_PREFIX}* "
                              "are the operator's")


def _credential_problems(spec: Mapping[str, Any], at: str) -> Iterator[SpecProblem]:
    """Images and credentials: a job may not mount Secrets its author may not read."""
    for i, volume in enumerate(spec.get("volumes") or []):
        volume = volume or {}
        if "secret" in volume:
            yield SpecProblem(f"{at}.volumes[{i}].secret", "Secret volumes are not allowed: a "
                              "job may not mount credentials its author may not read")
        for j, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            for kind in source or {}:
                if kind not in ALLOWED_PROJECTIONS:
                    yield SpecProblem(f"{at}.volumes[{i}].projected.sources[{j}].{kind}",
                                      f"projected {kind} is not allowed: it carries credentials")
    for kind in CONTAINER_LISTS:
        for i, container in enumerate(spec.get(kind) or []):
            container = container or {}
            if "image" in container:
                yield SpecProblem(f"{at}.{kind}[{i}].image", "set by the operator: use spec.image")
            for j, env in enumerate(container.get("env") or []):
                if ((env or {}).get("valueFrom") or {}).get("secretKeyRef") is not None:
                    yield SpecProblem(f"{at}.{kind}[{i}].env[{j}].valueFrom.secretKeyRef",
                                      "Secrets are not allowed in a job's environment")
            for j, source in enumerate(container.get("envFrom") or []):
                if (source or {}).get("secretRef") is not None:
                    yield SpecProblem(f"{at}.{kind}[{i}].envFrom[{j}].secretRef",
                                      "Secrets are not allowed in a job's environment")


def restricted_problems(spec: Mapping[str, Any], at: str) -> Iterator[SpecProblem]:
    """What in a pod spec the baseline and restricted Pod Security Standards forbid."""
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield SpecProblem(f"{at}.{field}", "must not be true")
    context = spec.get("securityContext") or {}
    yield from _context_problems(context, f"{at}.securityContext", pod_level=True)
    for i, sysctl in enumerate(context.get("sysctls") or []):
        name = (sysctl or {}).get("name", "")
        if name not in SAFE_SYSCTLS:
            yield SpecProblem(f"{at}.securityContext.sysctls[{i}].name",
                              f"sysctl {name!r} is not one of the safe sysctls")
    for i, volume in enumerate(spec.get("volumes") or []):
        for kind in (key for key in (volume or {}) if key != "name"):
            if kind not in RESTRICTED_VOLUME_TYPES:
                yield SpecProblem(f"{at}.volumes[{i}].{kind}", f"{kind} volumes are not allowed "
                                  "(restricted Pod Security Standard)")
    for kind in CONTAINER_LISTS:
        for i, container in enumerate(spec.get(kind) or []):
            container = container or {}
            yield from _context_problems(container.get("securityContext") or {},
                                         f"{at}.{kind}[{i}].securityContext", pod_level=False)
            for j, port in enumerate(container.get("ports") or []):
                if (port or {}).get("hostPort"):
                    yield SpecProblem(f"{at}.{kind}[{i}].ports[{j}].hostPort",
                                      "host ports are not allowed")


def _context_problems(context: Mapping[str, Any], at: str,
                      pod_level: bool) -> Iterator[SpecProblem]:
    """Fields of a (pod or container) security context below the restricted standard."""
    if context.get("runAsNonRoot") is False:
        yield SpecProblem(f"{at}.runAsNonRoot", "pods must run as non-root")
    if context.get("runAsUser") == 0:
        yield SpecProblem(f"{at}.runAsUser", "pods must run as non-root")
    seccomp = context.get("seccompProfile")
    if seccomp is not None and (seccomp or {}).get("type") not in ("RuntimeDefault", "Localhost"):
        yield SpecProblem(f"{at}.seccompProfile.type",
                          "the seccomp profile must be RuntimeDefault or Localhost")
    apparmor = context.get("appArmorProfile")
    if apparmor is not None and (apparmor or {}).get("type") not in ("RuntimeDefault",
                                                                       "Localhost"):
        yield SpecProblem(f"{at}.appArmorProfile.type",
                          "the AppArmor profile must be RuntimeDefault or Localhost")
    selinux = context.get("seLinuxOptions") or {}
    if selinux.get("type", "") not in ALLOWED_SELINUX_TYPES:
        yield SpecProblem(f"{at}.seLinuxOptions.type", "this SELinux type is not allowed")
    for field in ("user", "role"):
        if selinux.get(field):
            yield SpecProblem(f"{at}.seLinuxOptions.{field}", "may not be set")
    if (context.get("windowsOptions") or {}).get("hostProcess"):
        yield SpecProblem(f"{at}.windowsOptions.hostProcess", "must not be true")
    if pod_level:
        return
    if context.get("privileged"):
        yield SpecProblem(f"{at}.privileged", "must not be true")
    if context.get("allowPrivilegeEscalation"):
        yield SpecProblem(f"{at}.allowPrivilegeEscalation", "must not be true")
    if context.get("procMount") not in (None, "Default"):
        yield SpecProblem(f"{at}.procMount", "must be Default")
    capabilities = context.get("capabilities")
    if capabilities is not None:
        added = [c for c in (capabilities or {}).get("add") or [] if c != "NET_BIND_SERVICE"]
        if added:
            yield SpecProblem(f"{at}.capabilities.add",
                              f"only NET_BIND_SERVICE may be added, not {', '.join(added)}")
        if "drop" in (capabilities or {}) and "ALL" not in (capabilities.get("drop") or []):
            yield SpecProblem(f"{at}.capabilities.drop", "must drop ALL")


def spark_conf_problems(conf: Mapping[str, SettingValue], path: str,
                        policy: JobPolicy) -> Iterator[SpecProblem]:
    """Spark settings a job may not make: where and as whom its pods run is the operator's.
    Labels, annotations and node selectors set through Spark are held to the pod template's
    rules; what the pods are and where they run is never read from a Secret."""
    for key in sorted(conf):
        value = conf[key]
        malformed = key_problem(key)
        at = f"{path}[{key!r}]" if malformed else f"{path}[{key}]"
        problem = malformed or (value_problem(value) if isinstance(value, str) else None)
        if problem is not None:
            yield SpecProblem(at, problem)
            continue
        # Spark's keys are case-sensitive; refusing every spelling of an owned one is safer.
        normalised = key.lower()
        name = qualified_suffix(key)
        if normalised in _OWNED_SPARK_KEYS_LOWER or normalised.startswith(
                _OWNED_SPARK_PREFIXES_LOWER):
            yield SpecProblem(at, "set by the operator; a job may not change where, or as whom, "
                              "its pods run")
        elif not isinstance(value, str):
            if key in IMAGE_SPARK_KEYS or name is not None:
                yield SpecProblem(at, "images, labels, annotations and node selectors are not "
                                  "read from Secrets: give the value itself")
        elif key in IMAGE_SPARK_KEYS:
            yield from _image_problems(value, at, policy)
        elif name is not None:
            if ".label." in key:
                yield from _label_problems(name, at)
            elif ".annotation." in key:
                yield from _annotation_problems(name, value, at)
            elif not policy.allow_control_plane:
                yield from _control_plane_problems(name, at)


_OWNED_SPARK_KEYS_LOWER = frozenset(key.lower() for key in OWNED_SPARK_KEYS)
_OWNED_SPARK_PREFIXES_LOWER = tuple(prefix.lower() for prefix in OWNED_SPARK_PREFIXES)


def _image_problems(image: str, at: str, policy: JobPolicy) -> Iterator[SpecProblem]:
    if not any(image.startswith(prefix) for prefix in policy.allowed_images):
        allowed = ", ".join(policy.allowed_images) or "none: only the operator's own image"
        yield SpecProblem(at, f"image {image!r} is not allowed by the operator (allowed image "
                          f"prefixes: {allowed}; see `dataflow operator --allow-image`)")


def _module_denied(reference: str, denied: frozenset[str]) -> str | None:
    module = reference.split(":", 1)[0]
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        if ".".join(parts[:i]) in denied:
            return ".".join(parts[:i])
    return None


def _function_problems(spec: DataflowJobSpec, root: str,
                       policy: JobPolicy) -> Iterator[SpecProblem]:
    for i, op in enumerate(spec.pipeline):
        at = f"{root}.pipeline[{i}]"
        references: list[tuple[str, int | str | None]] = [(f"{at}.function", op.function)]
        references += [(f"{at}.inputs[{j}].keyBy", edge.key_by)
                       for j, edge in enumerate(op.inputs)]
        for path, reference in references:
            if isinstance(reference, str) and is_function_ref(reference):
                module = _module_denied(reference, policy.denied_modules)
                if module is not None:
                    yield SpecProblem(path, f"operator {op.name!r}: functions of module "
                                      f"{module!r} are not allowed ({reference!r}); the operator "
                                      "denies them (--denied-modules)")


def policy_problems(spec: DataflowJobSpec, policy: JobPolicy,
                    root: str = "spec") -> list[SpecProblem]:
    """Every way `spec` asks for more than `policy` lets a job have."""
    problems = list(_function_problems(spec, root, policy))
    size = len(json.dumps(spec.model_dump(mode="json", by_alias=True, exclude_defaults=True),
                          separators=(",", ":")))
    if size > policy.max_spec_bytes:
        problems.append(SpecProblem(root, f"the spec is {size // 1024} KiB; the operator "
                                    f"allows at most {policy.max_spec_bytes // 1024} KiB "
                                    "(--max-spec-bytes): put large inputs in files or volumes"))
    if len(spec.pipeline) > policy.max_operators:
        problems.append(SpecProblem(f"{root}.pipeline", f"{len(spec.pipeline)} operators; the "
                                    f"operator allows at most {policy.max_operators} per job "
                                    "(--max-operators)"))
    account = spec.service_account_name
    if account is not None and account not in policy.allowed_service_accounts:
        allowed = ", ".join(sorted(policy.allowed_service_accounts)) or "none"
        problems.append(SpecProblem(f"{root}.serviceAccountName", f"service account {account!r} "
                                    f"is not allowed by the operator (allowed: {allowed}; see "
                                    "`dataflow operator --allow-service-account`)"))
    if spec.image is not None:
        problems += _image_problems(spec.image, f"{root}.image", policy)
    problems += spark_conf_problems(spec.spark_conf, f"{root}.sparkConf", policy)
    templates = spec.pod_template
    for role in ("driver", "executor"):
        template = getattr(templates, role) if templates else None
        if template:
            problems += template_problems(template, f"{root}.podTemplate.{role}", role, policy)
    return problems


def check_policy(spec: DataflowJobSpec, policy: JobPolicy, root: str = "spec") -> None:
    problems = policy_problems(spec, policy, root)
    if problems:
        raise SpecError(problems)

