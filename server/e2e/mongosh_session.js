// A user's mongosh session against `tscoll serve`, every answer checked.
//
// Run non-interactively (server/e2e/run.sh does):
//   mongosh --quiet --file server/e2e/mongosh_session.js "mongodb://127.0.0.1:PORT/e2e"
// Every step runs; a wrong answer fails its step, and the script throws at the end if any
// step failed, so mongosh exits non-zero. The session leaves the collection
// `e2e.mongosh_kept` behind (the other collections are dropped) for run.sh to read back with
// `tscoll find` once the server has stopped.

let checks = 0;

function fail(what, got, want) {
  throw new Error(`${what}: got ${EJSON.stringify(got)}, want ${EJSON.stringify(want)}`);
}

function check(cond, what, got) {
  checks += 1;
  if (!cond) {
    throw new Error(`${what}: got ${EJSON.stringify(got)}`);
  }
}

// The value as relaxed Extended JSON with every document's keys sorted: documents compare
// by content, whatever their field order.
function canonical(value) {
  const sortKeys = (v) => {
    if (Array.isArray(v)) {
      return v.map(sortKeys);
    }
    if (v !== null && typeof v === "object") {
      const out = {};
      for (const k of Object.keys(v).sort()) {
        out[k] = sortKeys(v[k]);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(EJSON.serialize(value, { relaxed: true })));
}

function checkEq(got, want, what) {
  checks += 1;
  const g = canonical(got);
  const w = canonical(want);
  if (g !== w) {
    fail(what, got, want);
  }
}

// A number as MongoDB sends counts (Int32 or Double): a JavaScript number, not a Long.
function checkNumber(got, want, what) {
  checks += 1;
  if (typeof got !== "number" || got !== want) {
    const shown =
      got !== null && typeof got === "object"
        ? `${got.constructor.name}(${got})`
        : `${typeof got} ${JSON.stringify(got)}`;
    throw new Error(`${what}: got ${shown}, want the number ${want}`);
  }
}

// Runs one step and goes on after a failure (a later step may fail because of it: the
// first failure is the one to read); the script throws at the end if any step failed.
const failed = [];
function step(name, body) {
  try {
    body();
  } catch (e) {
    const msg = e && e.message ? e.message : String(e);
    failed.push(`${name}: ${msg}`);
    print(`FAIL ${name}: ${msg}`);
    return;
  }
  print(`ok  ${name}`);
}

const MINUTE = 60 * 1000;
const BASE = Date.UTC(2024, 0, 1); // 2024-01-01T00:00:00Z
const N = 300; // one measurement a minute over 5 hours, the 3 sensors in turn
const SENSORS = ["s1", "s2", "s3"];

function measurement(i) {
  return {
    ts: new Date(BASE + i * MINUTE),
    sensor: { id: SENSORS[i % 3], site: "roof" },
    temp: 10 + (i % 50),
    humidity: 0.5 + (i % 10) / 100,
    seq: i,
  };
}

step("dropDatabase (a fresh start)", () => {
  checkEq(db.getName(), "e2e", "the database of the connection string");
  checkEq(db.dropDatabase().ok, 1, "ok");
});

step("createCollection with timeseries options", () => {
  const r = db.createCollection("weather", {
    timeseries: { timeField: "ts", metaField: "sensor", granularity: "minutes" },
  });
  checkEq(r.ok, 1, "createCollection ok");
});

step("getCollectionInfos shows a timeseries collection", () => {
  const infos = db.getCollectionInfos({ name: "weather" });
  checkEq(infos.length, 1, "one collection named weather");
  checkEq(infos[0].type, "timeseries", "type");
  checkEq(infos[0].options.timeseries.timeField, "ts", "timeField");
  checkEq(infos[0].options.timeseries.metaField, "sensor", "metaField");
  checkEq(infos[0].options.timeseries.granularity, "minutes", "granularity");
});

step("insertMany of 300 measurements", () => {
  const docs = [];
  for (let i = 0; i < N; i++) {
    docs.push(measurement(i));
  }
  const r = db.weather.insertMany(docs);
  checkEq(r.acknowledged, true, "acknowledged");
  checkEq(Object.keys(r.insertedIds).length, N, "insertedIds");
  checkEq(db.weather.countDocuments(), N, "countDocuments after insert");
});

step("find().sort({ts: -1}).limit(5)", () => {
  const got = db.weather.find().sort({ ts: -1 }).limit(5).toArray();
  checkEq(got.length, 5, "documents");
  for (let k = 0; k < 5; k++) {
    const want = measurement(N - 1 - k);
    checkEq(got[k].ts, want.ts, `ts of document ${k}`);
    checkEq(got[k].sensor, want.sensor, `sensor of document ${k}`);
    checkEq(got[k].temp, want.temp, `temp of document ${k}`);
    checkEq(got[k].seq, want.seq, `seq of document ${k}`);
    check(got[k]._id !== undefined, `document ${k} has an _id`, got[k]);
  }
});

step("find with filter and projection", () => {
  const got = db.weather
    .find({ "sensor.id": "s2", seq: { $lt: 10 } }, { _id: 0, seq: 1, temp: 1 })
    .sort({ ts: 1 })
    .toArray();
  checkEq(got, [
    { seq: 1, temp: 11 },
    { seq: 4, temp: 14 },
    { seq: 7, temp: 17 },
  ], "s2's first three");
});

step("iterating a cursor past its first batch (getMore)", () => {
  let n = 0;
  let last = -1;
  db.weather.find({}, { seq: 1 }).sort({ ts: 1 }).batchSize(7).forEach((d) => {
    check(d.seq === last + 1, "seq in order", d);
    last = d.seq;
    n += 1;
  });
  checkEq(n, N, "documents iterated");
});

step("aggregate $group by $dateTrunc hour, $sort", () => {
  const got = db.weather
    .aggregate([
      {
        $group: {
          _id: { $dateTrunc: { date: "$ts", unit: "hour" } },
          count: { $sum: 1 },
          maxTemp: { $max: "$temp" },
        },
      },
      { $sort: { _id: 1 } },
    ])
    .toArray();
  checkEq(got.length, 5, "hours");
  for (let h = 0; h < 5; h++) {
    checkEq(got[h]._id, new Date(BASE + h * 60 * MINUTE), `hour ${h}`);
    checkEq(got[h].count, 60, `count of hour ${h}`);
    checkEq(got[h].maxTemp, 59, `maxTemp of hour ${h}`);
  }
});

step("aggregate $match/$group by sensor", () => {
  const got = db.weather
    .aggregate([
      { $match: { seq: { $gte: 150 } } },
      { $group: { _id: "$sensor.id", n: { $sum: 1 } } },
      { $sort: { _id: 1 } },
    ])
    .toArray();
  checkEq(got, [
    { _id: "s1", n: 50 },
    { _id: "s2", n: 50 },
    { _id: "s3", n: 50 },
  ], "per sensor");
});

step("updateMany", () => {
  const r = db.weather.updateMany({ "sensor.id": "s1" }, { $set: { status: "checked" } });
  checkEq(r.acknowledged, true, "acknowledged");
  checkEq(r.matchedCount, 100, "matchedCount");
  checkEq(r.modifiedCount, 100, "modifiedCount");
  checkEq(db.weather.countDocuments({ status: "checked" }), 100, "documents with the new field");
  const one = db.weather.findOne({ seq: 3 });
  checkEq(one.status, "checked", "s1's document updated");
  checkEq(one.temp, 13, "s1's other fields kept");
  checkEq(db.weather.findOne({ seq: 4 }).status, undefined, "s2's document untouched");
});

step("deleteMany", () => {
  const r = db.weather.deleteMany({ ts: { $lt: new Date(BASE + 60 * MINUTE) } });
  checkEq(r.acknowledged, true, "acknowledged");
  checkEq(r.deletedCount, 60, "deletedCount");
  checkEq(db.weather.countDocuments(), N - 60, "remaining");
  checkEq(db.weather.countDocuments({ seq: { $lt: 60 } }), 0, "the first hour gone");
});

step("countDocuments and estimatedDocumentCount", () => {
  checkEq(db.weather.countDocuments(), 240, "countDocuments");
  checkEq(db.weather.countDocuments({ "sensor.id": "s3" }), 80, "countDocuments with filter");
  checkEq(db.weather.estimatedDocumentCount(), 240, "estimatedDocumentCount");
});

step("distinct sensor.id", () => {
  const got = db.weather.distinct("sensor.id");
  checkEq(got.slice().sort(), SENSORS, "distinct");
});

step("createCollection of the collection left behind", () => {
  db.createCollection("mongosh_kept", {
    timeseries: { timeField: "t", metaField: "tag" },
  });
  const r = db.mongosh_kept.insertMany([
    { t: new Date(BASE), tag: "left", v: 1 },
    { t: new Date(BASE + MINUTE), tag: "left", v: 2 },
    { t: new Date(BASE + 2 * MINUTE), tag: "left", v: 3 },
  ]);
  checkEq(Object.keys(r.insertedIds).length, 3, "inserted");
});

step("getCollectionNames", () => {
  const names = db.getCollectionNames().filter((n) => !n.startsWith("system."));
  checkEq(names.sort(), ["mongosh_kept", "weather"], "collections");
});

step("show collections", () => {
  // The shell helper behind `show collections`; its printable value lists the names.
  const r = show("collections");
  const names = r.value
    .map((c) => (typeof c === "string" ? c : c.name))
    .filter((n) => !n.startsWith("system."));
  checkEq(names.sort(), ["mongosh_kept", "weather"], "show collections");
});

step("db.weather.stats()", () => {
  const s = db.weather.stats();
  checkEq(s.ok, 1, "ok");
  checkEq(s.count, 240, "count");
  check(s.ns === "e2e.weather", "ns", s.ns);
});

step("db.stats()", () => {
  const s = db.stats();
  checkEq(s.ok, 1, "ok");
  checkEq(s.db, "e2e", "db");
  checkEq(s.collections, 2, "collections");
  checkEq(s.objects, 243, "objects");
});

step("createIndex and getIndexes", () => {
  const name = db.weather.createIndex({ "sensor.id": 1, ts: -1 });
  checkEq(name, "sensor.id_1_ts_-1", "index name");
  const ixs = db.weather.getIndexes();
  const ix = ixs.find((i) => i.name === "sensor.id_1_ts_-1");
  check(ix !== undefined, "the new index is listed", ixs);
  checkEq(ix.key, { "sensor.id": 1, ts: -1 }, "index key");
  // The index does not change the answers.
  checkEq(db.weather.countDocuments({ "sensor.id": "s2" }), 80, "count with the index");
});

step("dropIndex", () => {
  const r = db.weather.dropIndex("sensor.id_1_ts_-1");
  checkEq(r.ok, 1, "ok");
  const names = db.weather.getIndexes().map((i) => i.name);
  check(!names.includes("sensor.id_1_ts_-1"), "the index is gone", names);
});

step("show dbs (listDatabases)", () => {
  const r = db.adminCommand({ listDatabases: 1 });
  checkEq(r.ok, 1, "ok");
  const e2e = r.databases.find((d) => d.name === "e2e");
  check(e2e !== undefined, "e2e is listed", r.databases);
  const shown = show("dbs");
  check(shown.value.some((d) => d.name === "e2e"), "show dbs lists e2e", shown.value);
});

step("serverStatus", () => {
  const s = db.serverStatus();
  checkEq(s.ok, 1, "ok");
  check(typeof s.version === "string", "version", s.version);
  check(s.connections.current >= 1, "connections.current", s.connections);
});

step("drop", () => {
  checkEq(db.weather.drop(), true, "drop returns true");
  const names = db.getCollectionNames().filter((n) => !n.startsWith("system."));
  checkEq(names, ["mongosh_kept"], "collections after drop");
  checkEq(db.weather.countDocuments(), 0, "the dropped collection reads as empty");
});

step("reply counts are numbers, as MongoDB sends them (Int32)", () => {
  // Scripts compare with ===: a Long (an Int64 in the reply) is never === a number.
  db.createCollection("types", { timeseries: { timeField: "ts" } });
  try {
    const ins = db.types.insertMany([0, 1, 2, 3].map((i) => ({ ts: new Date(BASE + i * MINUTE), i })));
    checkNumber(Object.keys(ins.insertedIds).length, 4, "insertMany insertedIds");
    const upd = db.types.updateMany({ i: { $lt: 2 } }, { $set: { x: 1 } });
    checkNumber(upd.matchedCount, 2, "updateMany matchedCount");
    checkNumber(upd.modifiedCount, 2, "updateMany modifiedCount");
    const one = db.types.updateOne({ i: 3 }, { $set: { x: 2 } });
    checkNumber(one.matchedCount, 1, "updateOne matchedCount");
    checkNumber(one.modifiedCount, 1, "updateOne modifiedCount");
    const del = db.types.deleteMany({ i: { $gte: 2 } });
    checkNumber(del.deletedCount, 2, "deleteMany deletedCount");
    checkNumber(db.types.estimatedDocumentCount(), 2, "estimatedDocumentCount");
    checkNumber(db.runCommand({ count: "types" }).n, 2, "count command's n");
  } finally {
    db.types.drop();
  }
});

step("bulkWrite", () => {
  db.createCollection("bulk", { timeseries: { timeField: "ts", metaField: "m" } });
  try {
    const r = db.bulk.bulkWrite([
      { insertOne: { document: { ts: new Date(BASE), m: 1, v: 1 } } },
      { insertOne: { document: { ts: new Date(BASE + MINUTE), m: 2, v: 2 } } },
      { updateMany: { filter: { m: 1 }, update: { $set: { v: 10 } } } },
      { deleteOne: { filter: { m: 2 } } },
    ]);
    checkEq(r.acknowledged, true, "acknowledged");
    checkNumber(r.insertedCount, 2, "insertedCount");
    checkNumber(r.matchedCount, 1, "matchedCount");
    checkNumber(r.modifiedCount, 1, "modifiedCount");
    checkNumber(r.deletedCount, 1, "deletedCount");
    checkEq(db.bulk.find({}, { _id: 0, m: 1, v: 1 }).toArray(), [{ m: 1, v: 10 }], "what is left");
  } finally {
    db.bulk.drop();
  }
});

if (failed.length > 0) {
  throw new Error(`mongosh session: ${failed.length} step(s) failed:\n  ${failed.join("\n  ")}`);
}
print(`mongosh session: ${checks} checks passed`);
