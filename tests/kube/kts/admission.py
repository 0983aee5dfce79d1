"""What the API server's admission does to a pod before it is stored, for the pods the
controller makes and for pods posted directly: the RuntimeClass plugin (a pod naming a
RuntimeClass that does not exist is refused) then Pod Security (podsecurity.py)."""
from . import podsecurity


def admit_pod(ctx, ns, name, spec):
    """(refusal message or None, [warnings]) for a pod named name in ns with this spec."""
    from . import generic   # noqa: PLC0415 (generic imports api, which imports this module)
    spec = spec if isinstance(spec, dict) else {}
    rc = spec.get("runtimeClassName")
    if rc and generic.runtime_class(ctx, rc) is None:
        return f'pods "{name}" is forbidden: pod rejected: RuntimeClass "{rc}" not found', []
    forbidden, warnings = podsecurity.check(generic.namespace_labels(ctx, ns), spec)
    if forbidden:
        return f'pods "{name}" is forbidden: {forbidden}', warnings
    return None, warnings
