"""The app-facing client products build from Swift and Foundation alone: their dependency closure (from
`swift package describe --type json`, `dump-package` for platform conditions, `show-dependencies` for
where each package is) holds no system-library target and no C target, and their sources import no
Glibc, Musl, HTTPCore or C shim.

One exemption, exactly: swift-crypto's vendored C (BoringSSL, XKCP). Its `Crypto` product depends on
those targets only on non-Apple platforms (its manifest conditions the edges on linux, android,
windows, wasi, openbsd); on iOS, macOS, tvOS, watchOS and visionOS `Crypto` is a re-export of CryptoKit
and no C is built. On Linux they are C sources compiled by SwiftPM, not a system library (no
pkg-config, nothing to install). So: the closure as Apple platforms see it has no C target at all; the
closure as Linux sees it has C targets of package swift-crypto only; neither has a system-library target.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess

import pytest

from paths import ROOT
CLIENT_PRODUCTS = ["DictionaryClient", "DictionaryClientURLSession"]
APPLE = {"macos", "ios", "tvos", "watchos", "visionos", "maccatalyst", "driverkit"}
EXEMPT_C_PACKAGE = "swift-crypto"
FORBIDDEN_IMPORT = re.compile(r"^\s*(?:@_exported\s+|@testable\s+|(?:public|package|internal)\s+)?import\s+(?:\w+\s+)?"
                              r"(Glibc|Musl|HTTPCore|CZstd|CBrotli|COpenSSL|CZlib|CLinux|DictionaryCodec|"
                              r"DictionaryTransport|HTTPServer|HTTPClient)\b", re.M)


def swift_json(*args: str, cwd: pathlib.Path) -> dict:
    r = subprocess.run(["swift", "package", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"swift package {' '.join(args)} in {cwd}: {r.stderr[-2000:]}"
    return json.loads(r.stdout[r.stdout.index("{"):])


class Package:
    """One package's targets (module type, dependencies with their platform conditions) and products."""

    def __init__(self, identity: str, path: pathlib.Path):
        self.identity = identity
        self.path = path
        described = swift_json("describe", "--type", "json", cwd=path)
        dumped = swift_json("dump-package", cwd=path)
        self.module_type = {t["name"]: t["module_type"] for t in described["targets"]}
        self.sources = {t["name"]: [path / t["path"] / s for s in t.get("sources", [])] for t in described["targets"]}
        self.products = {p["name"]: p["targets"] for p in described["products"]}
        # name -> [(kind, name, package or None, platforms or None)]
        self.dependencies: dict[str, list[tuple[str, str, str | None, list[str] | None]]] = {}
        for target in dumped["targets"]:
            edges = []
            for dependency in target.get("dependencies", []):
                (kind, spec), = dependency.items()
                condition = spec[-1] if spec and isinstance(spec[-1], dict) else None
                platforms = condition.get("platformNames") if condition else None
                if kind == "byName":
                    edges.append(("byName", spec[0], None, platforms))
                elif kind == "target":
                    edges.append(("target", spec[0], None, platforms))
                elif kind == "product":
                    edges.append(("product", spec[0], spec[1], platforms))
            self.dependencies[target["name"]] = edges
        for name, type_ in ((t["name"], t["type"]) for t in dumped["targets"]):
            if type_ == "system":
                self.module_type[name] = "SystemLibraryTarget"


class Packages:
    """The package graph, each package described on first use (`swift package describe` and
    `dump-package` take about a second per package, so only the packages the walk reaches are read)."""

    def __init__(self):
        tree = swift_json("show-dependencies", "--format", "json", cwd=ROOT)
        self.paths: dict[str, pathlib.Path] = {"dcserve": ROOT}
        self.children: dict[str, list[str]] = {}

        def walk(identity: str, node: dict) -> None:
            self.children[identity] = [d["identity"] for d in node.get("dependencies", [])]
            for dep in node.get("dependencies", []):
                if dep["identity"] not in self.paths:
                    self.paths[dep["identity"]] = pathlib.Path(dep["path"])
                    walk(dep["identity"], dep)
        walk("dcserve", tree)
        self.loaded: dict[str, Package] = {}

    def __getitem__(self, identity: str) -> Package:
        if identity not in self.loaded:
            self.loaded[identity] = Package(identity, self.paths[identity])
        return self.loaded[identity]

    def product_owner(self, package: str, product: str) -> str:
        """The package providing `product` to `package`: itself, or one of its direct dependencies."""
        for identity in [package, *self.children.get(package, [])]:
            if product in self[identity].products:
                return identity
        raise AssertionError(f"product {product} used by {package} not found")


@pytest.fixture(scope="module")
def packages() -> Packages:
    return Packages()


def closure(packages: Packages, platform: str, products: list[str] = CLIENT_PRODUCTS) -> set[tuple[str, str]]:
    """(package, target) pairs `products` of this package need on `platform` ("apple" or "linux")."""
    def applies(platforms: list[str] | None) -> bool:
        if platforms is None:
            return True
        return bool(APPLE & set(platforms)) if platform == "apple" else "linux" in platforms

    def product_targets(user: str, product: str, package: str | None = None) -> list[tuple[str, str]]:
        owner = package if package is not None else packages.product_owner(user, product)
        return [(owner, t) for t in packages[owner].products[product]]

    seen: set[tuple[str, str]] = set()
    stack = [pair for product in products for pair in product_targets("dcserve", product, "dcserve")]
    while stack:
        package, target = stack.pop()
        if (package, target) in seen:
            continue
        seen.add((package, target))
        for kind, name, dep_package, platforms in packages[package].dependencies.get(target, []):
            if not applies(platforms):
                continue
            if kind == "product":
                stack += product_targets(package, name, dep_package.lower())
            elif name in packages[package].module_type:
                stack.append((package, name))
            else:
                stack += product_targets(package, name)
    return seen


def test_apple_closure_is_swift_only(packages):
    reach = closure(packages, "apple")
    assert ("dcserve", "DictionaryClient") in reach
    bad = sorted(f"{p}:{t} ({packages[p].module_type[t]})" for p, t in reach if packages[p].module_type[t] != "SwiftTarget")
    assert not bad, f"C or system-library targets in the client products' closure on Apple platforms: {bad}"


def test_linux_closure_has_no_system_library_and_only_swift_cryptos_vendored_c(packages):
    reach = closure(packages, "linux")
    system = sorted(f"{p}:{t}" for p, t in reach if packages[p].module_type[t] == "SystemLibraryTarget")
    assert not system, f"system-library targets in the client products' closure: {system}"
    c = sorted(f"{p}:{t}" for p, t in reach if packages[p].module_type[t] == "ClangTarget" and p != EXEMPT_C_PACKAGE)
    assert not c, f"C targets outside {EXEMPT_C_PACKAGE} in the client products' closure: {c}"
    # The exemption is not vacuous: it names what Linux really builds.
    assert any(p == EXEMPT_C_PACKAGE and packages[p].module_type[t] == "ClangTarget" for p, t in reach)
    dcserve_targets = sorted(t for p, t in reach if p == "dcserve")
    assert not {"HTTPCore", "DictionaryCodec", "DictionaryTransport", "CZstd", "CBrotli", "COpenSSL", "CZlib",
                "CLinux"} & set(dcserve_targets), dcserve_targets


def test_client_sources_import_no_c_library_or_server_module(packages):
    reach = closure(packages, "linux")
    offenders = []
    for package, target in sorted(reach):
        if package != "dcserve":
            continue
        for source in packages[package].sources[target]:
            text = source.read_text()
            for m in FORBIDDEN_IMPORT.finditer(text):
                offenders.append(f"{source.relative_to(ROOT)}: {m.group(0).strip()}")
            if "canImport(Glibc)" in text or "canImport(Musl)" in text:
                offenders.append(f"{source.relative_to(ROOT)}: canImport(Glibc/Musl)")
    assert not offenders, offenders


def test_the_check_catches_a_c_dependency(packages):
    """The closure walk sees through products and targets: DictionaryCodec's closure holds its shims."""
    reach = closure(packages, "linux", ["DictionaryCodec"])
    assert {("dcserve", "CZstd"), ("dcserve", "CBrotli"), ("dcserve", "COpenSSL")} <= reach
    assert FORBIDDEN_IMPORT.search("import Glibc\n") and FORBIDDEN_IMPORT.search("@_exported import HTTPCore\n")
    assert FORBIDDEN_IMPORT.search("internal import CZstd\n") and not FORBIDDEN_IMPORT.search("import HTTPCoreX\n")


@pytest.mark.skipif(os.environ.get("DCSERVE_CLIENT_ONLY_BUILD") != "1",
                    reason="builds swift-crypto in a build folder of its own (minutes): `make client-only-build` runs it")
def test_client_targets_build_without_the_servers_system_libraries():
    """With pkg-config unable to find libzstd, libbrotli, OpenSSL or zlib, the client targets build, in a
    build folder of their own (nothing reused from the server's build), and compile none of the server's
    system-library shims (SwiftPM may warn while planning that it found no .pc file for the package's
    system-library targets; it builds none of them for these targets)."""
    empty = ROOT / ".build" / "no-pkgconfig"
    empty.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PKG_CONFIG_PATH": str(empty), "PKG_CONFIG_LIBDIR": str(empty)}
    for target in CLIENT_PRODUCTS:
        r = subprocess.run(["swift", "build", "--scratch-path", str(ROOT / ".build-client-only"), "--target", target],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "error:" not in r.stdout + r.stderr, r.stdout[-3000:]
        assert not re.search(r"Compiling (DictionaryCodec|HTTPCore|CZstd|CBrotli|COpenSSL|CZlib|CLinux)\b", r.stdout), r.stdout[-3000:]
