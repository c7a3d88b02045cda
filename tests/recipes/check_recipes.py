#!/usr/bin/env python3
"""Checks ringtrain's environment recipes without Spack or Apptainer.

env/spack.yaml: valid against Spack's environment schema (spack_env.schema.json), every spec
one Spack spec, a spec for everything the CMake build looks for (spack_check.py).
env/ringtrain.def: a well-formed Apptainer definition that builds a portable binary (no
-march=native), installs what the build needs (Ninja included), installs the build with
`cmake --install` and runs ringtrain in %test (apptainer_check.py).
What the build looks for is read from its CMake files, presets and sources (build_needs.py).

Prints one line per problem and exits 1 when there is any, 0 otherwise.
`--self-test` checks the checker: the repository's recipes pass, and copies broken in known
ways are each rejected with the expected message.
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree for the modules beside this one

try:
    import jsonschema  # noqa: F401 (imported by spack_check; checked here for a clear message)
    import yaml  # noqa: F401
except ImportError as missing:
    print(f"check_recipes: error: {sys.executable} lacks {missing.name}: install PyYAML and "
          "jsonschema (Debian: apt-get install python3-yaml python3-jsonschema, which "
          "env/install_deps.sh does; or pip install pyyaml jsonschema)")
    sys.exit(2)

import build_needs
from apptainer_check import check_definition
from spack_check import check_spack

SCHEMA = "tests/recipes/spack_env.schema.json"
SPACK = "env/spack.yaml"
DEFINITION = "env/ringtrain.def"
DEPS = "env/install_deps.sh"


def check(files):
    """Every problem of the recipes in files ({relative path: text}), one line each."""
    needs, errors = build_needs.scan(files)
    schema = json.loads(files[SCHEMA])
    errors += check_spack(files.get(SPACK, ""), schema, needs)
    errors += check_definition(files, needs)
    return errors


# (what is broken, file, text replaced, replacement, part of the expected message)
BROKEN = [
    ("unquoted spec", SPACK, '- "cmake@3.22:"', "- cmake@3.22:",
     "YAML read `- cmake@3.22:` as the mapping"),
    ("no ninja", SPACK, '    - "ninja"\n', "", "no spec gives generator Ninja"),
    ("not a spec", SPACK, '"hdf5@1.14 ~mpi"', '"hdf5@@1.14 ~mpi"', "is not one Spack spec"),
    ("two specs in one", SPACK, '"onednn"', '"onednn libpng"', "'onednn libpng' is not one"),
    ("unknown key", SPACK, "  concretizer:", "  concretiser:", "'concretiser' was unexpected"),
    ("bad unify", SPACK, "unify: true", "unify: always", "spack.concretizer.unify"),
    ("spec as a number", SPACK, '"onednn"', "3", "spack.specs[10]: 3 is not valid"),
    ("-march=native flags", DEFINITION, "-DRINGTRAIN_TESTS=OFF",
     "-DRINGTRAIN_TESTS=OFF -DCMAKE_CXX_FLAGS=-march=native", "-march=native: the image would"),
    ("native preset", DEFINITION, " -DRINGTRAIN_MARCH=x86-64-v3", "",
     "`cmake --preset release` compiles with -march=native"),
    ("no Bootstrap", DEFINITION, "Bootstrap: docker\n", "", "no 'Bootstrap:' line"),
    ("no From", DEFINITION, "From: nvcr.io", "#From: nvcr.io", "no 'From:' line"),
    ("unknown section", DEFINITION, "%environment", "%enviroment", "unknown section %enviroment"),
    ("no %test", DEFINITION, "%test\n", "%help\n", "no %test section"),
    ("%test without ringtrain", DEFINITION, "%test\n", "%test\n    true\n%labels\n",
     "%test never runs ringtrain"),
    ("no install", DEFINITION, "    cmake --install build --prefix /usr/local\n", "",
     "no `cmake --install` of the folder it configured (build)"),
    ("install_deps.sh without ninja-build", DEPS, " ninja-build ", " ",
     "gives generator Ninja (%post's cmake): install ninja-build"),
    ("no install_deps.sh", DEFINITION, "    bash /opt/ringtrain/env/install_deps.sh\n", "",
     "install libhdf5-dev"),
    ("a plain CUDA base image", DEFINITION, "-cudnn-devel-", "-devel-",
     "install the base image nvidia/cuda:*-cudnn-devel-*"),
    ("unmapped find_package", "CMakeLists.txt", "find_package(Threads REQUIRED)",
     "find_package(Threads REQUIRED)\nfind_package(Foo REQUIRED)",
     "find_package(Foo): not in"),
]


def self_test(root):
    files = build_needs.read_repo(root)
    failures = [f"the repository's recipes: {line}" for line in check(files)]
    for what, path, old, new, expected in BROKEN:
        if old not in files.get(path, ""):
            failures.append(f"{what}: {path} no longer holds {old!r}: update the self-test")
            continue
        broken = dict(files, **{path: files[path].replace(old, new, 1)})
        found = check(broken)
        if not any(expected in line for line in found):
            failures.append(f"{what}: no problem says {expected!r}; found: {found}")
        else:
            print(f"rejected ({what}): {next(line for line in found if expected in line)}")
    for line in failures:
        print("FAILED: " + line)
    print("check_recipes self-test " + ("passed" if not failures else "FAILED") +
          f" ({len(BROKEN)} broken copies)")
    return 1 if failures else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(here, "..", ".."),
                        help="the repository root (default: the one holding this script)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on copies of the recipes broken in known ways")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isfile(os.path.join(root, SCHEMA)):
        print(f"check_recipes: error: {root} has no {SCHEMA} (pass --root REPO)")
        return 2
    if args.self_test:
        return self_test(root)
    problems = check(build_needs.read_repo(root))
    for line in problems:
        print(line)
    print(f"check_recipes: {len(problems)} problem(s) in {SPACK} and {DEFINITION}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
