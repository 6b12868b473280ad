#!/usr/bin/env python3
"""Checks META.json against the PGXN Meta Spec 1.0.0 and against the project: the version matches
bloomfilter.control and debian/changelog, the Debian package files README.md names are of that
version, and every file it names exists. No network.
  test/meta/check_meta.py [META.json]   exits 1 with one line per problem
  test/meta/check_meta.py --self-test   checks that broken copies of META.json are refused
"""
import json
import os
import re
import sys

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
LICENSES = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
            "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
            "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
            "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown"}
TOP_KEYS = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
            "description", "generated_by", "tags", "no_index", "prereqs", "release_status",
            "resources"}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}

problems = []


def problem(text):
    problems.append(text)


def is_custom(key):
    return key.startswith(("x_", "X_"))


def check_string(where, value, empty_ok=False):
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        problem(f"{where}: must be a non-empty string")
        return False
    return True


def check_version(where, value):
    if check_string(where, value) and not SEMVER.match(value):
        problem(f"{where}: {value!r} is not a semantic version (like 1.2.0)")


def check_uri(where, value):
    if check_string(where, value) and not URI.match(value):
        problem(f"{where}: {value!r} is not a URI")


def check_meta(meta, root):
    for key in REQUIRED:
        if key not in meta:
            problem(f"{key}: required")
    for key in meta:
        if key not in TOP_KEYS and not is_custom(key):
            problem(f"{key}: not a key of the PGXN meta spec (custom keys start with x_)")

    spec = meta.get("meta-spec", {})
    if not isinstance(spec, dict) or spec.get("version") != "1.0.0":
        problem('meta-spec: must be {"version": "1.0.0", ...}')
    elif "url" in spec:
        check_uri("meta-spec.url", spec["url"])

    if "name" in meta and check_string("name", meta["name"]):
        if not re.match(r"^[^\s/\\:]{2,}$", meta["name"]):
            problem("name: at least two characters, no whitespace, slash, backslash or colon")
    if "version" in meta:
        check_version("version", meta["version"])
    if "abstract" in meta:
        check_string("abstract", meta["abstract"])
    if "description" in meta:
        check_string("description", meta["description"])
    if "generated_by" in meta:
        check_string("generated_by", meta["generated_by"])

    maintainer = meta.get("maintainer")
    if maintainer is not None:
        names = maintainer if isinstance(maintainer, list) else [maintainer]
        if not names:
            problem("maintainer: at least one")
        for i, name in enumerate(names):
            check_string(f"maintainer[{i}]", name)

    license_ = meta.get("license")
    if isinstance(license_, str):
        if license_ not in LICENSES:
            problem(f"license: {license_!r} is not one of the spec's license strings")
    elif isinstance(license_, list):
        for item in license_:
            if item not in LICENSES:
                problem(f"license: {item!r} is not one of the spec's license strings")
    elif isinstance(license_, dict):
        for name, url in license_.items():
            check_uri(f"license.{name}", url)
    elif license_ is not None:
        problem("license: a string, a list of strings or an object of name: URL")

    provides = meta.get("provides")
    if provides is not None:
        if not isinstance(provides, dict) or not provides:
            problem("provides: an object naming at least one extension")
        else:
            for ext, entry in provides.items():
                where = f"provides.{ext}"
                if not isinstance(entry, dict):
                    problem(f"{where}: must be an object")
                    continue
                for key in entry:
                    if key not in {"file", "version", "abstract", "docfile"} and not is_custom(key):
                        problem(f"{where}.{key}: not a key of the spec")
                if "version" not in entry:
                    problem(f"{where}.version: required")
                else:
                    check_version(f"{where}.version", entry["version"])
                for key in ("file", "docfile"):
                    if key in entry and check_string(f"{where}.{key}", entry[key]):
                        if not os.path.isfile(os.path.join(root, entry[key])):
                            problem(f"{where}.{key}: {entry[key]} does not exist")

    status = meta.get("release_status")
    if status is not None and status not in {"stable", "testing", "unstable"}:
        problem(f"release_status: {status!r} is not stable, testing or unstable")

    tags = meta.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not tags:
            problem("tags: a non-empty list of strings")
        else:
            for i, tag in enumerate(tags):
                if check_string(f"tags[{i}]", tag) and len(tag) > 255:
                    problem(f"tags[{i}]: longer than 255 characters")

    no_index = meta.get("no_index")
    if no_index is not None:
        if not isinstance(no_index, dict) or set(no_index) - {"file", "directory"}:
            problem("no_index: an object with file and/or directory lists")

    prereqs = meta.get("prereqs")
    if prereqs is not None:
        if not isinstance(prereqs, dict):
            problem("prereqs: must be an object")
        else:
            for phase, relations in prereqs.items():
                if phase not in PHASES and not is_custom(phase):
                    problem(f"prereqs.{phase}: not a phase of the spec")
                    continue
                if not isinstance(relations, dict):
                    problem(f"prereqs.{phase}: must be an object")
                    continue
                for relation, needs in relations.items():
                    where = f"prereqs.{phase}.{relation}"
                    if relation not in RELATIONS and not is_custom(relation):
                        problem(f"{where}: not a relation of the spec")
                    elif not isinstance(needs, dict):
                        problem(f"{where}: must be an object of name: version")
                    else:
                        for name, version in needs.items():
                            if version != 0 and version != "0":
                                # A version, or a range like ">= 1.2.0, < 2.0.0".
                                for part in str(version).split(","):
                                    part = re.sub(r"^\s*(==|!=|>=|<=|>|<)?\s*", "", part).strip()
                                    if not SEMVER.match(part):
                                        problem(f"{where}.{name}: {version!r} is not a version or range")

    resources = meta.get("resources")
    if resources is not None:
        if not isinstance(resources, dict):
            problem("resources: must be an object")
        else:
            for key, value in resources.items():
                where = f"resources.{key}"
                if key == "homepage":
                    check_uri(where, value)
                elif key == "bugtracker":
                    if not isinstance(value, dict) or not ({"web", "mailto"} & set(value)):
                        problem(f"{where}: an object with web and/or mailto")
                    else:
                        if "web" in value:
                            check_uri(f"{where}.web", value["web"])
                        if "mailto" in value:
                            check_string(f"{where}.mailto", value["mailto"])
                elif key == "repository":
                    if not isinstance(value, dict) or not ({"url", "web"} & set(value)):
                        problem(f"{where}: an object with url and/or web")
                    else:
                        for part in ("url", "web"):
                            if part in value:
                                check_uri(f"{where}.{part}", value[part])
                        if "url" in value and "type" not in value:
                            problem(f"{where}.type: required with url (git, svn, ...)")
                elif not is_custom(key):
                    problem(f"{where}: not a resource of the spec")


def check_project(meta, root):
    """What PGXN does not check: the same version everywhere, the files really shipped."""
    version = meta.get("version", "")
    try:
        with open(os.path.join(root, "bloomfilter.control")) as f:
            control = f.read()
        default = re.search(r"^default_version\s*=\s*'([^']+)'", control, re.M).group(1)
        if not (version == default or version.startswith(default + ".")):
            problem(f"version: {version} but bloomfilter.control's default_version is {default}")
        provided = meta.get("provides", {}).get("bloomfilter", {}).get("version")
        if provided != version:
            problem(f"provides.bloomfilter.version: {provided} but version is {version}")
    except (OSError, AttributeError):
        problem("bloomfilter.control: no default_version found")
    changelog = os.path.join(root, "debian", "changelog")
    package_version = version
    if os.path.isfile(changelog):
        with open(changelog) as f:
            first = f.readline()
        m = re.match(r"^\S+ \(([^)-]+)(-[^)]*)?\)", first)
        if not m or m.group(1) != version:
            problem(f"debian/changelog: its first entry is not version {version}")
        elif m:
            package_version = m.group(1) + (m.group(2) or "")
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        with open(readme) as f:
            check_readme(f.read(), package_version)
    for key in ("repository", "bugtracker"):
        if key not in meta.get("resources", {}):
            problem(f"resources.{key}: missing")


# A Debian package file as make deb names it: postgresql-15-bloomfilter_2.2.0_amd64.deb.
DEB_FILE = re.compile(r"postgresql-\d+-bloomfilter_([^_\s`]+)_[a-z0-9]+\.deb")


def check_readme(text, package_version):
    """Every package file README.md names (its install line) is of the version being released:
    debian/changelog's, whose upstream part is META.json's version."""
    names = DEB_FILE.findall(text)
    if not names:
        problem("README.md: names no postgresql-NN-bloomfilter_<version>_<arch>.deb to install")
    for named in names:
        if named != package_version:
            problem(f"README.md: installs a package of version {named}, but make deb builds "
                    f"{package_version} (debian/changelog, META.json)")


# Broken variants of a valid META.json, each of which must be refused.
BREAKAGES = {
    "no name": lambda m: m.pop("name"),
    "version not semantic": lambda m: m.update(version="1.2"),
    "unknown license": lambda m: m.update(license="postgres"),
    "unknown top-level key": lambda m: m.update(homepage="https://localhost/"),
    "meta-spec 2": lambda m: m.update({"meta-spec": {"version": "2.0.0"}}),
    "provided file missing": lambda m: m["provides"]["bloomfilter"].update(file="missing.sql"),
    "provided version differs": lambda m: m["provides"]["bloomfilter"].update(version="9.9.9"),
    "release status": lambda m: m.update(release_status="final"),
    "repository without type": lambda m: m["resources"]["repository"].pop("type"),
    "bugtracker missing": lambda m: m["resources"].pop("bugtracker"),
    "prereq not a version": lambda m: m["prereqs"]["runtime"]["requires"].update(PostgreSQL="fifteen"),
}


def self_test(path):
    import copy
    root = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        valid = json.load(f)
    failed = 0
    for name, breaks in BREAKAGES.items():
        meta = copy.deepcopy(valid)
        breaks(meta)
        problems.clear()
        check_meta(meta, root)
        check_project(meta, root)
        if not problems:
            print(f"self-test: {name}: not refused", file=sys.stderr)
            failed = 1
    # A README naming another version's package, or none.
    for name, text in {"README names an old package": "sudo apt install ./postgresql-15-bloomfilter_0.0.1_amd64.deb",
                       "README names no package": "make install"}.items():
        problems.clear()
        check_readme(text, valid.get("version"))
        if not problems:
            print(f"self-test: {name}: not refused", file=sys.stderr)
            failed = 1
    problems.clear()
    print(f"self-test: {len(BREAKAGES) + 2} broken variants of {path}, "
          f"{'all refused' if not failed else 'NOT all refused'}")
    return failed


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test(sys.argv[2] if len(sys.argv) > 2 else "META.json")
    path = sys.argv[1] if len(sys.argv) > 1 else "META.json"
    root = os.path.dirname(os.path.abspath(path))
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    if not isinstance(meta, dict):
        print(f"{path}: not a JSON object", file=sys.stderr)
        return 1
    check_meta(meta, root)
    check_project(meta, root)
    for text in problems:
        print(f"{path}: {text}", file=sys.stderr)
    if not problems:
        print(f"{path}: valid PGXN meta spec 1.0.0, version {meta['version']}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
