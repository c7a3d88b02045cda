"""Checks a Spack environment manifest (env/spack.yaml) without Spack.

Three checks: the manifest against tests/recipes/spack_env.schema.json (Spack's own schema for
the keys used), every spec string against the shape of one Spack spec, and a spec for each
thing the CMake build looks for (build_needs.PROVIDERS' Spack packages).
"""
import re

import jsonschema
import yaml

from build_needs import PROVIDERS

PATH = "env/spack.yaml"

# One Spack spec: a package name, then any of @versions, +variant ~variant, key=value,
# %compiler and ^dependency (each dependency with its own @versions and variants); a key=value
# after a space.
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_VERSIONS = r"@=?[A-Za-z0-9_.:,-]*[A-Za-z0-9_.:]"
_BOOL_VARIANT = r"(?:\+\+?|~~?)[A-Za-z0-9_][A-Za-z0-9_.-]*"
_KEY_VALUE = r"[A-Za-z_][A-Za-z0-9_-]*==?(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.:,+*=-]+)"
_NODE = rf"(?:%%?|\^)\s*(?:\[[^\]]*\]\s*)?{_NAME}"
_TOKEN = rf"(?:\s*{_VERSIONS}|\s*{_BOOL_VARIANT}|\s+{_KEY_VALUE}|\s*{_NODE})"
SPEC_RE = re.compile(rf"^\s*({_NAME}){_TOKEN}*\s*$")
SPEC_SHAPE = "name[@versions] [+variant ~variant key=value] [%compiler] [^dependency]"


def _where(error):
    """spack.specs[0] for the path of a schema error."""
    parts = list(error.absolute_path)
    if not parts:
        return "(top level)"
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _hint(instance):
    """Why an entry that is not a string is likely a spec YAML misread."""
    if isinstance(instance, dict) and len(instance) == 1:
        key, value = next(iter(instance.items()))
        if value is None and isinstance(key, str):
            return (f": YAML read `- {key}:` as the mapping {{{key!r}: null}}, not a spec; "
                    f'quote it: - "{key}:"')
    return ""


def schema_errors(data, schema):
    try:
        jsonschema.Draft7Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        return [f"tests/recipes/spack_env.schema.json: not a valid JSON Schema: {e.message}"]
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{PATH}: {_where(e)}: {e.message}{_hint(e.instance)}" for e in errors]


def spec_roots(specs):
    """(root package names, errors) of the spec list."""
    roots, errors = set(), []
    for i, spec in enumerate(specs):
        if not isinstance(spec, str):
            errors.append(f"{PATH}: spack.specs[{i}]: {spec!r} is not a spec string{_hint(spec)}")
            continue
        match = SPEC_RE.match(spec)
        if not match:
            errors.append(f"{PATH}: spack.specs[{i}]: '{spec}' is not one Spack spec "
                          f"({SPEC_SHAPE})")
            continue
        roots.add(match.group(1).split(".")[-1])
    return roots, errors


def missing_needs(roots, needs):
    """One line per group of needs (same providers) that no spec of the environment gives."""
    by_providers = {}
    for need, where in sorted(needs.items()):
        providers = PROVIDERS.get(need)  # build_needs.scan reports a need it has no entry for
        if providers is not None:
            by_providers.setdefault(providers[0], []).append(f"{need} ({where})")
    errors = []
    for spack_names, wanted in sorted(by_providers.items()):
        if not roots & set(spack_names):
            errors.append(f"{PATH}: no spec gives {', '.join(wanted)}: add "
                          f"{' or '.join(spack_names)} to spack.specs")
    return errors


def check_spack(text, schema, needs):
    """Every problem of the manifest text, one line each."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return [f"{PATH}: not valid YAML: {e}"]
    errors = schema_errors(data, schema)
    if errors:
        return errors
    roots, errors = spec_roots(data["spack"].get("specs") or [])
    return errors + missing_needs(roots, needs)
