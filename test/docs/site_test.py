#!/usr/bin/python3
"""The documentation site, read in a real browser.

Builds the site with scripts/docs, serves it on 127.0.0.1 and drives Debian's headless Chromium
(through chromedriver and Selenium) over every page: each loads without a console error; every
internal link and anchor resolves; every lock kind (src/kinds/) has its page, with its five
sections; every public class and struct (include/rlock/) has its reference page; code blocks are
highlighted; the search box finds try_lock. Screenshots of the landing page and of a kind page
are kept in the output folder (--out, default build/docs-test) as the test's artifacts.

Usage: test/docs/site_test.py --source DIR [--out DIR]    (run by ctest: label docs)
Exit 0 when every check passed, 1 with the failures listed otherwise.
"""
import argparse
import functools
import http.server
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    sys.exit("site_test: Selenium is missing: apt-get install chromium chromium-driver "
             "python3-selenium (scripts/test installs them)")

# The sections every kind's page has (docs/guide/kinds/), in order.
KIND_SECTIONS = ["In Redisson", "Layout", "Rules", "Faults", "Proof"]
PAGE_LOAD_SECONDS = 20
SEARCH_SECONDS = 15

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site):
    """An HTTP server on a free loopback port, in a thread; returns (server, base URL)."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


def browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                "--user-data-dir=" + profile):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
    return driver


def public_classes(include):
    """(namespace path, name, 'class'|'struct', header) of each class or struct the public
    headers define at namespace scope outside rlock::detail, and of each public one nested in
    those; forward declarations are left out. Reads the layout clang-format gives them."""
    found = []
    for header in sorted(include.glob("*.hpp")):
        namespaces = []
        outer = None  # (path, access) of the namespace-scope class being read
        for line in header.read_text().splitlines():
            m = re.match(r"^namespace ([\w:]+) \{", line)
            if m:
                namespaces.extend(m.group(1).split("::"))
                continue
            m = re.match(r"^\}  // namespace ([\w:]+)", line)
            if m:
                del namespaces[-len(m.group(1).split("::")):]
                continue
            if "detail" in namespaces or not namespaces or namespaces[0] != "rlock":
                continue
            if outer and line.startswith("};"):
                outer = None
                continue
            m = re.match(r"^( ?)(public|private|protected):", line)
            if outer and m:
                outer = (outer[0], m.group(2))
                continue
            m = re.match(r"^(  )?(class|struct) (?:\[\[[^]]*\]\] )?(?:RLOCK_EXPORT )?(\w+)(.*)$",
                         line)
            if not m or m.group(4).rstrip().endswith(";"):
                continue
            if m.group(1) is None:
                path = list(namespaces)
                found.append((path, m.group(3), m.group(2), header.name))
                if m.group(4).rstrip().endswith("{"):
                    outer = (path + [m.group(3)], "public" if m.group(2) == "struct" else "private")
            elif outer and outer[1] == "public":
                found.append((outer[0], m.group(3), m.group(2), header.name))
    return found


def doxygen_page(namespaces, name, what):
    escape = lambda s: s.replace("_", "__")
    return "%s%s.html" % (what, "_1_1".join(escape(s) for s in namespaces + [name]))


def visit(driver, url):
    """Loads url; returns (ids, links, severe console messages)."""
    driver.get(url)
    WebDriverWait(driver, PAGE_LOAD_SECONDS).until(
        lambda d: d.execute_script("return document.readyState") == "complete")
    ids = set(driver.execute_script(
        "return Array.from(document.querySelectorAll('[id],a[name]'))"
        ".map(e => e.id || e.getAttribute('name'))"))
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return ids, links, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    source = args.source.resolve()
    out = (args.out or source / "build" / "docs-test").resolve()

    started = time.monotonic()
    subprocess.run([str(source / "scripts" / "docs"), "--out", str(out)], check=True)
    site = out / "site"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    print("site built: %d pages (%.1f s)" % (len(pages), time.monotonic() - started))

    with tempfile.TemporaryDirectory(prefix="rlock-docs-chromium-") as profile:
        server, base = serve(site)
        try:
            driver = browser(profile)
            try:
                check_site(driver, base, site, source, out, pages)
            finally:
                driver.quit()
        finally:
            server.shutdown()

    print("%.1f s" % (time.monotonic() - started))
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("docs site: every check passed")
    return 0


def check_site(driver, base, site, source, out, pages):
    """Every check of the module's docstring, on the served site; failures go to fail()."""
    started = time.monotonic()
    seen = {}  # page -> ids
    all_links = []  # (page, href)
    for page in pages:
        try:
            ids, links, errors = visit(driver, base + page)
        except TimeoutException:
            fail("%s: did not load within %d s" % (page, PAGE_LOAD_SECONDS))
            continue
        seen[page] = ids
        all_links.extend((page, href) for href in links)
        for message in errors:
            fail("%s: console error: %s" % (page, message))
    print("visited %d pages (%.1f s)" % (len(seen), time.monotonic() - started))

    # Every internal link names a file of the site, and its anchor an element of that page.
    checked = 0
    for page, href in all_links:
        parts = urllib.parse.urlsplit(href)
        if not href.startswith(base):
            if parts.scheme in ("http", "https") and parts.hostname in ("127.0.0.1",
                                                                        "localhost"):
                fail("%s: link to another local server: %s" % (page, href))
            continue
        target = urllib.parse.unquote(parts.path[len(urllib.parse.urlsplit(base).path):])
        if target == "" or target.endswith("/"):
            target += "index.html"
        checked += 1
        if not (site / target).is_file():
            fail("%s: broken link %s" % (page, href))
            continue
        if parts.fragment and target.endswith(".html"):
            fragment = urllib.parse.unquote(parts.fragment)
            if target in seen and fragment not in seen[target]:
                fail("%s: link %s: no element with id '%s' in %s" %
                     (page, href, fragment, target))
    print("checked %d internal links" % checked)

    # Every kind of src/kinds/ has its page, with its sections in order (<kind>_forms.cpp holds a
    # kind's constructors, the kind is <kind>.cpp's; registry.cpp lists the kinds).
    kinds = sorted(p.stem for p in (source / "src" / "kinds").glob("*.cpp")
                   if p.stem not in ("names", "registry") and not p.stem.endswith("_forms"))
    kinds += ["multi"]
    for kind in kinds:
        page = "guide/kinds/%s.html" % kind.replace("_", "-")
        if page not in seen:
            fail("kind %s: no page %s" % (kind, page))
            continue
        driver.get(base + page)
        headings = driver.execute_script(
            "return Array.from(document.querySelectorAll('article h2'))"
            ".map(h => h.textContent.replace(/\\u00b6/g, '').trim())")
        if [h for h in headings if h in KIND_SECTIONS] != KIND_SECTIONS:
            fail("%s: sections %s, expected %s in this order" %
                 (page, headings, KIND_SECTIONS))

    # Every public class and struct has its reference page.
    classes = public_classes(source / "include" / "rlock")
    for namespaces, name, what, header in classes:
        page = "reference/api/" + doxygen_page(namespaces, name, what)
        if page not in seen:
            fail("%s: %s %s has no reference page (%s)" %
                 (header, what, "::".join(namespaces + [name]), page))
    print("%d kinds, %d public classes and structs checked" % (len(kinds), len(classes)))

    # Code blocks are present and highlighted: a keyword is coloured unlike plain text.
    for page in ("getting-started.html", "guide/kinds/fair.html"):
        driver.get(base + page)
        result = driver.execute_script("""
            const blocks = document.querySelectorAll('.highlight pre code');
            const keyword = document.querySelector('.highlight pre code .k, .highlight pre code .kt');
            if (!keyword) return [blocks.length, null, null];
            const code = keyword.closest('code');
            return [blocks.length, getComputedStyle(keyword).color, getComputedStyle(code).color];
        """)
        blocks, keyword_colour, text_colour = result
        if blocks == 0:
            fail("%s: no code block" % page)
        elif keyword_colour is None or keyword_colour == text_colour:
            fail("%s: code is not highlighted (keyword %s, text %s)" %
                 (page, keyword_colour, text_colour))

    # The search box finds try_lock.
    driver.get(base + "index.html")
    box = driver.find_element(By.CSS_SELECTOR, "input[data-md-component='search-query']")
    box.click()
    box.send_keys("try_lock")
    try:
        WebDriverWait(driver, SEARCH_SECONDS).until(lambda d: d.find_elements(
            By.CSS_SELECTOR, ".md-search-result__item"))
        hits = driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a[href]")
        if not hits:
            raise TimeoutException("results without links")
        first = hits[0].get_attribute("href")
        # The teasers are cut short: the first result's page itself must have the word.
        driver.get(first)
        if "try_lock" not in driver.find_element(By.TAG_NAME, "article").text:
            fail("search for try_lock: the first result, %s, does not mention it" % first)
        else:
            print("search for try_lock: %d results, the first %s" % (len(hits), first))
    except TimeoutException:
        fail("search for try_lock: no result within %d s" % SEARCH_SECONDS)

    # The artifacts: the landing page and a kind's page as a reader sees them.
    for page, shot in (("index.html", "landing.png"),
                       ("guide/kinds/fair.html", "kind-fair.png")):
        driver.get(base + page)
        driver.save_screenshot(str(out / shot))
    print("screenshots: %s, %s" % (out / "landing.png", out / "kind-fair.png"))


if __name__ == "__main__":
    sys.exit(main())
