"""Checks an Apptainer definition file (env/ringtrain.def) without Apptainer.

The header has `Bootstrap:` and `From:`; every section is one Apptainer knows, once; nothing
compiles for the build machine's CPU (no -march=native, and every configure sets
RINGTRAIN_MARCH where its preset leaves CMakeLists.txt's `native`); %post installs what the
build looks for (apt-get lines, env/install_deps.sh's package list, the base image's CUDA), the
generator's tool (ninja-build for Ninja) included; %post installs the build with `cmake
--install` from the folder it configured; and %test runs ringtrain.
"""
import re
import shlex

from build_needs import IMAGE_CUDA, IMAGE_CUDNN, PROVIDERS, configure_presets, preset_field

PATH = "env/ringtrain.def"
DEPS_SCRIPT = "env/install_deps.sh"
SECTIONS = {"setup", "files", "post", "environment", "runscript", "startscript", "test",
            "labels", "help", "arguments",
            # the sections of the images' SCIF apps
            "appfiles", "appinstall", "appenv", "apphelp", "applabels", "apprun", "appstart",
            "apptest"}
HEADER_RE = re.compile(r"^([A-Za-z]+):\s*(.*?)\s*$")
SECTION_RE = re.compile(r"^%(\S+)")
RUNS_RINGTRAIN_RE = re.compile(r"^(?:exec\s+)?(?:\S*/)?ringtrain(?:\s|$)")
NOT_CONFIGURE = {"--build", "--install", "-E", "-P", "--open", "--workflow", "--help", "--version"}


def parse_definition(text):
    """(header {key: (value, line)}, sections {name: [(line, text)]}, errors)."""
    header, sections, errors, current = {}, {}, [], None
    for lineno, line in enumerate(text.split("\n"), 1):
        section = SECTION_RE.match(line)
        if section:
            current = section.group(1)
            if current not in SECTIONS:
                errors.append(f"{PATH}:{lineno}: unknown section %{current} (Apptainer knows "
                              f"{', '.join('%' + s for s in sorted(SECTIONS))})")
            elif current in sections:
                errors.append(f"{PATH}:{lineno}: a second %{current} section")
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append((lineno, line))
        elif line.strip() and not line.lstrip().startswith("#"):
            match = HEADER_RE.match(line)
            if match:
                header[match.group(1).lower()] = (match.group(2), lineno)
            else:
                errors.append(f"{PATH}:{lineno}: '{line}' is neither a header line "
                              "(Keyword: value) nor a section")
    return header, sections, errors


def commands(lines):
    """[(line, words)] of the shell commands of a section: continued lines joined, comments
    dropped, `&&`, `||`, `;` and `|` splitting one line into several commands."""
    joined, pending, start = [], "", None
    for lineno, line in lines:
        if start is None:
            start = lineno
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append((start, pending + line))
        pending, start = "", None
    result = []
    for lineno, line in joined:
        if line.strip().startswith("#"):
            continue
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            if words:
                result.append((lineno, words))
    return result


def script_packages(text):
    """The packages of a script's `packages=( ... )` list, each "$var" replaced by every value
    the script gives var (install_deps.sh picks the JPEG package by distribution)."""
    values = {}
    for name, value in re.findall(r"\b(\w+)=([A-Za-z0-9][\w.+-]*)", text):
        values.setdefault(name, set()).add(value)
    match = re.search(r"^packages=\((.*?)^\)", text, re.M | re.S)
    if not match:
        return set()
    packages = set()
    for word in shlex.split(match.group(1), comments=True):
        var = re.fullmatch(r"\$\{?(\w+)\}?", word)
        packages |= values.get(var.group(1), set()) if var else {word}
    return packages


def installed_packages(post, from_image, deps_text):
    """What %post installs: apt-get/apt install lines, install_deps.sh's list where %post runs
    it, and what the base image brings."""
    packages = set()
    for _, words in post:
        if words[0] in ("apt-get", "apt") and "install" in words:
            packages |= {w for w in words[words.index("install") + 1:] if not w.startswith("-")}
        if any(w.endswith(DEPS_SCRIPT) for w in words):
            packages |= script_packages(deps_text)
    if re.search(r"nvidia/cuda:[^\s]*-devel", from_image):
        packages.add(IMAGE_CUDA)
        if re.search(r"nvidia/cuda:[^\s]*cudnn[^\s]*-devel", from_image):
            packages.add(IMAGE_CUDNN)
    return packages


def _option(words, name):
    """The value of `name VALUE` or `name=VALUE` among the words; None when absent."""
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return None


def _defines(words):
    """{NAME: value} of the -DNAME[:TYPE]=value words."""
    defines = {}
    for i, word in enumerate(words):
        if word == "-D" and i + 1 < len(words):
            text = words[i + 1]
        else:
            text = word[2:] if word.startswith("-D") else ""
        if "=" in text:
            name, value = text.split("=", 1)
            defines[name.split(":")[0]] = value
    return defines


def _cache_variable(presets, preset, name):
    """A cache variable a configure preset sets (plain or {"type", "value"}); None when unset."""
    variables = (preset_field(presets, preset, "cacheVariables") if preset else None) or {}
    value = variables.get(name)
    return value.get("value") if isinstance(value, dict) else value


def configure_steps(post, files):
    """(errors, generators, build folders) of the cmake configure commands of %post."""
    presets = configure_presets(files)
    default = re.search(r"set\(\s*RINGTRAIN_MARCH\s+(\S+)\s+CACHE", files.get("CMakeLists.txt", ""))
    errors, generators, folders = [], set(), set()
    if not default:
        return [f"CMakeLists.txt: no RINGTRAIN_MARCH cache variable: the -march check of "
                f"{PATH} needs updating"], generators, folders
    for lineno, words in post:
        if not words[0].endswith("cmake") or NOT_CONFIGURE & set(words):
            continue
        preset = _option(words, "--preset")
        if preset and preset not in presets:
            errors.append(f"{PATH}:{lineno}: preset '{preset}' is not in CMakePresets.json")
        march = (_defines(words).get("RINGTRAIN_MARCH") or
                 _cache_variable(presets, preset, "RINGTRAIN_MARCH") or default.group(1))
        if march == "native":
            errors.append(f"{PATH}:{lineno}: `{' '.join(words[:3])}` compiles with "
                          "-march=native (RINGTRAIN_MARCH's default): the image then fails on "
                          "a CPU older than the build machine's; add -DRINGTRAIN_MARCH=x86-64-v3")
        preset_generator = preset_field(presets, preset, "generator") if preset else None
        generators.add(_option(words, "-G") or preset_generator or "Unix Makefiles")
        binary_dir = _option(words, "-B") or preset_field(presets, preset, "binaryDir") or "."
        folders.add(binary_dir.replace("${sourceDir}/", "").rstrip("/"))
    return errors, generators, folders


def _missing_packages(installed, needs):
    by_providers = {}
    for need, where in sorted(needs.items()):
        providers = PROVIDERS.get(need)
        if providers is not None:
            by_providers.setdefault(providers[1], []).append(f"{need} ({where})")
    return [f"{PATH}: %post installs nothing that gives {', '.join(wanted)}: install "
            f"{' or '.join(names)} (in %post or {DEPS_SCRIPT}'s list)"
            for names, wanted in sorted(by_providers.items()) if not installed & set(names)]


def _march_native_lines(text):
    return [f"{PATH}:{lineno}: -march=native: the image would run only on CPUs like the build "
            "machine's; use -DRINGTRAIN_MARCH=x86-64-v3"
            for lineno, line in enumerate(text.split("\n"), 1)
            if "-march=native" in line and not line.lstrip().startswith("#")]


def _install_and_test(post, folders, sections):
    errors = []
    installed = {w[2].rstrip("/") for _, w in post
                 if w[0].endswith("cmake") and w[1:2] == ["--install"] and len(w) > 2}
    if not installed & folders:
        errors.append(f"{PATH}: %post has no `cmake --install` of the folder it configured "
                      f"({', '.join(sorted(folders)) or 'none'}): install the build, e.g. "
                      "`cmake --install build --prefix /usr/local`")
    if "test" not in sections:
        errors.append(f"{PATH}: no %test section: add one that runs `ringtrain --version`")
    elif not any(RUNS_RINGTRAIN_RE.match(" ".join(w)) for _, w in commands(sections["test"])):
        errors.append(f"{PATH}: %test never runs ringtrain: add `ringtrain --version`")
    return errors


def check_definition(files, needs):
    """Every problem of the definition file, one line each."""
    text = files.get(PATH, "")
    header, sections, errors = parse_definition(text)
    for key in ("bootstrap", "from"):
        if key not in header:
            errors.append(f"{PATH}: the header has no '{key.capitalize()}:' line")
    errors += _march_native_lines(text)
    if "post" not in sections:
        return errors + [f"{PATH}: no %post section: nothing builds ringtrain"]
    post = commands(sections["post"])
    march_errors, generators, folders = configure_steps(post, files)
    errors += march_errors
    if not folders:
        errors.append(f"{PATH}: %post never configures ringtrain with cmake")
    from_image = header.get("from", ("", 0))[0]
    installed = installed_packages(post, from_image, files.get(DEPS_SCRIPT, ""))
    image_needs = {k: v for k, v in needs.items() if not k.startswith("generator ")}
    image_needs.update({f"generator {g}": "%post's cmake" for g in generators})
    errors += [f"{PATH}: %post's cmake uses the generator {g}, which tests/recipes/build_needs.py "
               "does not know" for g in generators if f"generator {g}" not in PROVIDERS]
    errors += _missing_packages(installed, {k: v for k, v in image_needs.items() if k in PROVIDERS})
    return errors + _install_and_test(post, folders, sections)
