"""A user's pymongo session against `tscoll serve`, every answer checked.

Usage (server/e2e/run.sh runs it in the venv that install.sh makes):
    target/e2e/venv/bin/python server/e2e/pymongo_session.py mongodb://127.0.0.1:PORT/

Runs every step; exits non-zero if any answer was wrong, naming the steps that failed. The
session leaves the collection `e2e_py.pymongo_kept` behind (the others are dropped) for run.sh
to read back with `tscoll list` once the server has stopped.
"""

import sys
import traceback
from datetime import datetime, timedelta, timezone

from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument, monitoring
from pymongo.errors import BulkWriteError

BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)
N = 300  # one measurement a minute over 5 hours, the 3 sensors in turn
SENSORS = ["s1", "s2", "s3"]


def measurement(i):
    return {
        "ts": BASE + timedelta(minutes=i),
        "sensor": {"id": SENSORS[i % 3], "site": "roof"},
        "temp": 10 + (i % 50),
        "seq": i,
    }


class CommandCounter(monitoring.CommandListener):
    """Counts the commands the client sends, by name."""

    def __init__(self):
        self.counts = {}

    def started(self, event):
        self.counts[event.command_name] = self.counts.get(event.command_name, 0) + 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


class Check:
    """Counts the checks; raises AssertionError with the step's message on a mismatch."""

    def __init__(self):
        self.n = 0

    def eq(self, got, want, what):
        self.n += 1
        if got != want:
            raise AssertionError(f"{what}: got {got!r}, want {want!r}")

    def true(self, cond, what, got=None):
        self.n += 1
        if not cond:
            raise AssertionError(f"{what}: got {got!r}")


def main(uri):
    counter = CommandCounter()
    client = MongoClient(
        uri,
        event_listeners=[counter],
        tz_aware=True,
        serverSelectionTimeoutMS=10_000,
        # The server has no replica set: writes go straight to it.
        retryWrites=False,
    )
    db = client["e2e_py"]
    check = Check()
    steps = []

    def step(fn):
        steps.append(fn)
        return fn

    @step
    def handshake():
        check.eq(client.admin.command("ping")["ok"], 1.0, "ping")
        info = client.server_info()
        check.true(isinstance(info.get("version"), str), "buildInfo version", info)
        client.drop_database("e2e_py")  # a fresh start
        check.eq(db.list_collection_names(), [], "collections after drop_database")

    @step
    def create_collection():
        db.create_collection(
            "weather",
            timeseries={"timeField": "ts", "metaField": "sensor", "granularity": "minutes"},
        )
        infos = list(db.list_collections(filter={"name": "weather"}))
        check.eq(len(infos), 1, "listed once")
        check.eq(infos[0]["type"], "timeseries", "type")
        ts = infos[0]["options"]["timeseries"]
        check.eq((ts["timeField"], ts["metaField"], ts["granularity"]),
                 ("ts", "sensor", "minutes"), "timeseries options")

    @step
    def insert_many():
        r = db.weather.insert_many([measurement(i) for i in range(N)])
        check.eq(len(r.inserted_ids), N, "inserted_ids")
        check.eq(db.weather.count_documents({}), N, "count after insert_many")

    @step
    def insert_many_ordered_with_a_bad_document():
        docs = [measurement(1000 + i) for i in range(5)]
        docs[2]["ts"] = "not a date"
        try:
            db.weather.insert_many(docs, ordered=True)
        except BulkWriteError as e:
            d = e.details
            check.eq(d["nInserted"], 2, "ordered: nInserted")
            check.eq([w["index"] for w in d["writeErrors"]], [2], "ordered: writeErrors index")
            check.true(isinstance(d["writeErrors"][0]["code"], int) and d["writeErrors"][0]["code"] != 0,
                       "ordered: error code", d["writeErrors"][0])
        else:
            raise AssertionError("ordered insert_many with a bad document did not fail")
        check.eq(db.weather.count_documents({"seq": {"$gte": 1000}}), 2, "ordered: stored")
        db.weather.delete_many({"seq": {"$gte": 1000}})

    @step
    def insert_many_unordered_with_a_bad_document():
        docs = [measurement(2000 + i) for i in range(5)]
        del docs[3]["ts"]
        try:
            db.weather.insert_many(docs, ordered=False)
        except BulkWriteError as e:
            d = e.details
            check.eq(d["nInserted"], 4, "unordered: nInserted")
            check.eq([w["index"] for w in d["writeErrors"]], [3], "unordered: writeErrors index")
        else:
            raise AssertionError("unordered insert_many with a bad document did not fail")
        check.eq(sorted(x["seq"] for x in db.weather.find({"seq": {"$gte": 2000}})),
                 [2000, 2001, 2002, 2004], "unordered: stored")
        r = db.weather.delete_many({"seq": {"$gte": 2000}})
        check.eq(r.deleted_count, 4, "cleanup deleted_count")
        check.eq(db.weather.count_documents({}), N, "count after the bad batches")

    @step
    def find_sort_limit_skip_projection():
        got = list(db.weather.find({}, {"_id": 0, "seq": 1, "ts": 1})
                   .sort("ts", DESCENDING).skip(2).limit(4))
        want = [{"ts": BASE + timedelta(minutes=i), "seq": i} for i in (297, 296, 295, 294)]
        check.eq(got, want, "sort/skip/limit/projection")
        got = list(db.weather.find({"sensor.id": "s3"}, {"_id": 0, "temp": 1, "seq": 1})
                   .sort([("seq", ASCENDING)]).limit(3))
        check.eq(got, [{"temp": 12, "seq": 2}, {"temp": 15, "seq": 5}, {"temp": 18, "seq": 8}],
                 "filter on the meta field")

    @step
    def find_with_get_more():
        before = counter.counts.get("getMore", 0)
        seqs = [d["seq"] for d in db.weather.find({}, {"seq": 1}).sort("ts", ASCENDING).batch_size(16)]
        check.eq(seqs, list(range(N)), "every document, in order")
        get_mores = counter.counts.get("getMore", 0) - before
        check.true(get_mores >= N // 16, "getMore commands sent", get_mores)

    @step
    def aggregate():
        got = list(db.weather.aggregate([
            {"$group": {"_id": {"$dateTrunc": {"date": "$ts", "unit": "hour"}},
                        "count": {"$sum": 1}, "avgTemp": {"$avg": "$temp"}}},
            {"$sort": {"_id": 1}},
        ]))
        check.eq([g["_id"] for g in got], [BASE + timedelta(hours=h) for h in range(5)], "hours")
        check.eq([g["count"] for g in got], [60] * 5, "counts per hour")
        want = [sum(measurement(i)["temp"] for i in range(60 * h, 60 * h + 60)) / 60 for h in range(5)]
        check.eq([g["avgTemp"] for g in got], want, "average temp per hour")
        got = list(db.weather.aggregate(
            [{"$match": {"sensor.id": "s2"}}, {"$count": "n"}], batchSize=1))
        check.eq(got, [{"n": 100}], "$match/$count")

    @step
    def count_documents_and_distinct():
        check.eq(db.weather.count_documents({"temp": {"$gte": 50}}), 60, "count_documents filter")
        check.eq(db.weather.estimated_document_count(), N, "estimated_document_count")
        check.eq(sorted(db.weather.distinct("sensor.id")), SENSORS, "distinct sensor.id")
        check.eq(sorted(db.weather.distinct("sensor.id", {"seq": {"$lt": 2}})), ["s1", "s2"],
                 "distinct with a filter")

    @step
    def update_many():
        r = db.weather.update_many({"sensor.id": "s2"}, {"$set": {"status": "checked"}})
        check.eq((r.matched_count, r.modified_count), (100, 100), "matched/modified")
        check.eq(db.weather.count_documents({"status": "checked"}), 100, "updated documents")
        d = db.weather.find_one({"seq": 4}, {"_id": 0})
        check.eq(d, {"ts": BASE + timedelta(minutes=4), "sensor": {"id": "s2", "site": "roof"},
                     "temp": 14, "seq": 4, "status": "checked"}, "an updated document")

    @step
    def find_one_and_update():
        d = db.weather.find_one_and_update(
            {"seq": 7}, {"$set": {"temp": 99}},
            projection={"_id": 0, "seq": 1, "temp": 1},
            return_document=ReturnDocument.AFTER)
        check.eq(d, {"seq": 7, "temp": 99}, "the document after the update")
        d = db.weather.find_one_and_update(
            {"seq": 8}, {"$set": {"temp": 98}},
            projection={"_id": 0, "seq": 1, "temp": 1},
            return_document=ReturnDocument.BEFORE)
        check.eq(d, {"seq": 8, "temp": 18}, "the document before the update")
        check.eq(db.weather.find_one({"seq": 8})["temp"], 98, "stored")

    @step
    def delete_many():
        r = db.weather.delete_many({"ts": {"$gte": BASE + timedelta(hours=4)}})
        check.eq(r.deleted_count, 60, "deleted_count")
        check.eq(db.weather.count_documents({}), N - 60, "remaining")
        check.eq(db.weather.find_one({"seq": {"$gte": 240}}), None, "the last hour gone")

    @step
    def list_collection_names():
        db.create_collection("pymongo_kept", timeseries={"timeField": "t", "metaField": "tag"})
        db.pymongo_kept.insert_many(
            [{"t": BASE + timedelta(seconds=i), "tag": "left", "v": i} for i in range(4)])
        names = sorted(n for n in db.list_collection_names() if not n.startswith("system."))
        check.eq(names, ["pymongo_kept", "weather"], "collections")
        check.true("e2e_py" in client.list_database_names(), "list_database_names",
                   client.list_database_names())

    @step
    def coll_stats():
        s = db.command("collStats", "weather")
        check.eq(s["ok"], 1.0, "ok")
        check.eq(s["ns"], "e2e_py.weather", "ns")
        check.eq(s["count"], N - 60, "count")
        check.true(s["timeseries"]["bucketCount"] >= 1, "timeseries.bucketCount", s["timeseries"])

    @step
    def server_status_bucket_catalog():
        s = db.command("serverStatus")
        bc = s["bucketCatalog"]
        for key in ("numBuckets", "numOpenBuckets", "numIdleBuckets", "memoryUsage"):
            check.true(isinstance(bc.get(key), int) and bc[key] >= 0, f"bucketCatalog.{key}", bc)
        check.true(bc.get("numMeasurementsCommitted", 0) >= N, "numMeasurementsCommitted", bc)
        check.true(s["opcounters"]["insert"] >= 1, "opcounters.insert", s["opcounters"])

    @step
    def indexes():
        name = db.weather.create_index([("sensor.id", ASCENDING), ("ts", DESCENDING)])
        check.eq(name, "sensor.id_1_ts_-1", "create_index name")
        listed = {ix["name"]: ix for ix in db.weather.list_indexes()}
        check.true(name in listed, "list_indexes shows it", list(listed))
        check.eq(dict(listed[name]["key"]), {"sensor.id": 1, "ts": -1}, "key")
        info = db.weather.index_information()
        check.true(name in info, "index_information", list(info))
        check.eq(db.weather.count_documents({"sensor.id": "s1"}), 80, "count with the index")
        db.weather.drop_index(name)
        names = [ix["name"] for ix in db.weather.list_indexes()]
        check.true(name not in names, "dropped", names)

    @step
    def drop():
        db.weather.drop()
        names = sorted(n for n in db.list_collection_names() if not n.startswith("system."))
        check.eq(names, ["pymongo_kept"], "collections after drop")
        check.eq(db.weather.count_documents({}), 0, "the dropped collection reads as empty")
        check.eq(db.pymongo_kept.count_documents({}), 4, "the kept collection")

    # Every step runs; a later one may fail because of an earlier one: read the first.
    failed = []
    for fn in steps:
        try:
            fn()
        except Exception as e:  # noqa: BLE001: every failure names its step
            traceback.print_exc()
            failed.append(f"{fn.__name__}: {e}")
            print(f"FAIL {fn.__name__}: {e}")
            continue
        print(f"ok  {fn.__name__}")
    client.close()
    if failed:
        print(f"pymongo session: {len(failed)} step(s) failed:", file=sys.stderr)
        for f in failed:
            print(f"  {f}", file=sys.stderr)
        return 1
    print(f"pymongo session: {check.n} checks passed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: pymongo_session.py MONGODB_URI", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
