"""What ringtrain's build looks for, read from its own files, and who provides each thing.

A need is named as the build names it: `find_package(HDF5)`, `pkg-config openblas`,
`find_library dnnl`, `find_path dnnl.h`, `generator Ninja` (a configure preset's generator),
`#include <xxhash.h>` (a header used without a CMake look-up) and `cmake` itself. PROVIDERS says
which Spack packages and which Debian packages give each one; a need missing from it is an
error, so a new dependency of the build cannot be forgotten in the recipes.
"""
import json
import os
import re

# What the base image of env/ringtrain.def gives without an apt package.
IMAGE_CUDA = "the base image nvidia/cuda:*-devel-*"
IMAGE_CUDNN = "the base image nvidia/cuda:*-cudnn-devel-*"

_MAKE = (("gmake",), ("make", "build-essential"))
_DNNL = (("onednn",), ("libdnnl-dev",))
_CUDNN = (("cudnn",), (IMAGE_CUDNN, "libcudnn9-dev-cuda-13", "nvidia-cudnn"))
_NCCL = (("nccl",), ("libnccl-dev",))

# need -> (Spack packages, Debian packages): one of each is enough. None: the compiler or the
# C library gives it.
PROVIDERS = {
    "cmake": (("cmake",), ("cmake",)),
    "generator Ninja": (("ninja",), ("ninja-build",)),
    "generator Unix Makefiles": _MAKE,
    "find_package(MPI)": (("openmpi", "mpich", "mvapich2"), ("libopenmpi-dev", "libmpich-dev")),
    "find_package(HDF5)": (("hdf5",), ("libhdf5-dev",)),
    "find_package(PkgConfig)": (("pkgconf", "pkg-config"), ("pkg-config", "pkgconf")),
    "pkg-config openblas": (("openblas",), ("libopenblas-dev",)),
    "find_package(OpenMP)": None,
    "find_package(Threads)": None,
    "find_path dnnl.h": _DNNL,
    "find_library dnnl": _DNNL,
    "find_package(CLI11)": (("cli11",), ("libcli11-dev",)),
    "find_package(spdlog)": (("spdlog",), ("libspdlog-dev",)),
    "find_package(nlohmann_json)": (("nlohmann-json",), ("nlohmann-json3-dev",)),
    "find_package(tomlplusplus)": (("tomlplusplus",), ("libtomlplusplus-dev",)),
    "find_package(JPEG)": (
        ("libjpeg-turbo", "libjpeg"),
        ("libjpeg62-turbo-dev", "libjpeg-turbo8-dev", "libjpeg-dev"),
    ),
    "find_package(PNG)": (("libpng",), ("libpng-dev",)),
    "find_package(LibArchive)": (("libarchive",), ("libarchive-dev",)),
    "find_package(OpenSSL)": (("openssl",), ("libssl-dev",)),
    "find_package(ICU)": (("icu4c",), ("libicu-dev",)),
    "find_package(GTest)": (("googletest",), ("libgtest-dev",)),
    "find_package(Python3)": (("python",), ("python3",)),
    "find_package(CUDAToolkit)": (("cuda",), (IMAGE_CUDA, "nvidia-cuda-toolkit")),
    "find_package(CUDNN)": _CUDNN,
    "find_path cudnn.h": _CUDNN,
    "find_library cudnn": _CUDNN,
    "find_package(NCCL)": _NCCL,
    "find_path nccl.h": _NCCL,
    "find_library nccl": _NCCL,
    "#include <xxhash.h>": (("xxhash",), ("libxxhash-dev",)),
}
# find_package(ringtrain): the project's own package, which tests/install/consumer builds against.
IGNORED = {"find_package(ringtrain)"}
# Headers the sources include without a CMake look-up for them.
BARE_HEADERS = ("xxhash.h",)

NEWLINE = "\n"
SKIPPED_DIRS = {".git", "data", "runs", ".cache"}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh")
FIND_PACKAGE_RE = re.compile(r"\bfind_package\(\s*(\w+)", re.IGNORECASE)
PKG_CHECK_RE = re.compile(r"\bpkg_check_modules\(\s*\w+([^)]*)\)", re.IGNORECASE)
FIND_FILE_RE = re.compile(r"\b(find_library|find_path)\(\s*\w+\s+(?:NAMES\s+)?([^\s)]+)",
                          re.IGNORECASE)
PKG_KEYWORDS = {"REQUIRED", "QUIET", "IMPORTED_TARGET", "GLOBAL", "NO_CMAKE_PATH",
                "NO_CMAKE_ENVIRONMENT_PATH"}


def read_repo(root):
    """{relative path: text} of every file the recipe checks read: the CMake files, the
    presets, env/, tests/recipes/ and the C++ and CUDA sources."""
    files = {}
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith("build"))
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in sorted(names):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            source = rel_dir.split("/")[0] in ("src", "include") and name.endswith(SOURCE_SUFFIXES)
            wanted = (name == "CMakeLists.txt" or name.endswith(".cmake") or source or
                      rel == "CMakePresets.json" or rel_dir in ("env", "tests/recipes"))
            if wanted:
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                    files[rel] = f.read()
    return files


def _strip_cmake_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n"))


def _cmake_needs(path, text):
    """[(need, 'path:line')] of one CMake file."""
    text = _strip_cmake_comments(text)
    found = []
    for m in FIND_PACKAGE_RE.finditer(text):
        found.append((f"find_package({m.group(1)})", m.start()))
    for m in PKG_CHECK_RE.finditer(text):
        for word in m.group(1).split():
            if word not in PKG_KEYWORDS:
                found.append((f"pkg-config {re.split(r'[<>=]', word)[0]}", m.start()))
    for m in FIND_FILE_RE.finditer(text):
        found.append((f"{m.group(1).lower()} {m.group(2)}", m.start()))
    return [(need, f"{path}:{text.count(NEWLINE, 0, at) + 1}") for need, at in found]


def configure_presets(files):
    """{name: preset} of CMakePresets.json's configure presets."""
    presets = json.loads(files.get("CMakePresets.json", "{}"))
    return {p["name"]: p for p in presets.get("configurePresets", [])}


def preset_field(presets, name, field):
    """A configure preset's field, looked up through its `inherits` chain; None when unset."""
    preset = presets.get(name)
    if preset is None:
        return None
    if field in preset:
        return preset[field]
    parents = preset.get("inherits", [])
    for parent in [parents] if isinstance(parents, str) else parents:
        value = preset_field(presets, parent, field)
        if value is not None:
            return value
    return None


def scan(files):
    """(needs, errors): needs maps each thing the build looks for to where it first does."""
    needs, errors = {}, []
    if "CMakeLists.txt" in files:
        needs["cmake"] = "CMakeLists.txt:1"
    for path in sorted(files):
        if os.path.basename(path) == "CMakeLists.txt" or path.endswith(".cmake"):
            for need, where in _cmake_needs(path, files[path]):
                needs.setdefault(need, where)
        elif path.endswith(SOURCE_SUFFIXES):
            for header in BARE_HEADERS:
                if re.search(rf"^\s*#\s*include\s*<{re.escape(header)}>", files[path], re.M):
                    needs.setdefault(f"#include <{header}>", path)
    presets = configure_presets(files)
    for name in presets:
        generator = preset_field(presets, name, "generator")
        if generator:
            needs.setdefault(f"generator {generator}", f"CMakePresets.json preset '{name}'")
    for need in sorted(set(needs) - IGNORED):
        if need not in PROVIDERS:
            errors.append(f"{needs[need]}: {need}: not in tests/recipes/build_needs.py's "
                          "PROVIDERS: add the Spack and Debian packages that provide it there, "
                          "and to env/spack.yaml and env/install_deps.sh")
    return {k: v for k, v in needs.items() if k not in IGNORED}, errors
