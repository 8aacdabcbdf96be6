//! The filter language against the cases of the MongoDB manual's query operator pages,
//! restated here as small collections and the `_id`s each filter must return (the ground
//! truth of MongoDB's documented behaviour), on a time-series collection: each document is a
//! measurement with a time and a meta value the filters do not look at.

use bson::{Bson, Document, Regex, doc};
use tscoll_engine::{CatalogOptions, Collection, FindOptions};
use tscoll_tests::spec::{at, insert_all, options, temp_collection};

/// Inserts `docs` (each with an `_id`) as measurements one second apart.
fn collection(docs: &[Document]) -> (tempfile::TempDir, tscoll_engine::Database, Collection) {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let measurements: Vec<Document> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut m = doc! { "t": at(i64::try_from(i).expect("i") * 1000), "m": "series" };
            m.extend(d.clone());
            m
        })
        .collect();
    insert_all(&coll, &measurements);
    (dir, db, coll)
}

/// The `_id`s `find` returns for `filter`, sorted.
fn ids(coll: &Collection, filter: Document) -> Vec<i32> {
    let mut v: Vec<i32> = coll
        .find(&filter, &FindOptions::default())
        .expect("find")
        .iter()
        .map(|d| d.get_i32("_id").expect("_id"))
        .collect();
    v.sort_unstable();
    // The other read paths (counts and columns evaluate the filter on decoded columns)
    // agree.
    assert_eq!(
        coll.count(&filter).expect("count"),
        v.len() as u64,
        "count {filter}"
    );
    let (batches, _) = tscoll_tests::arrow::find_arrow(coll, &filter, &FindOptions::default());
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, v.len(), "find_arrow {filter}");
    v
}

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_owned().try_into().expect("pattern"),
        options: options.to_owned().try_into().expect("options"),
    })
}

/// `$type`: addresses whose zip code is stored as a string, a double, an int, a long, or an
/// array holding a string. A type matches a value of that type or an array holding one;
/// "number" matches every numeric type; "array" matches arrays.
#[test]
fn type_matches_by_bson_type_and_inside_arrays() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "zip": "10021-3656" },
        doc! { "_id": 2, "zip": 2.0 },
        doc! { "_id": 3, "zip": 43_i32 },
        doc! { "_id": 4, "zip": 2_147_483_648_i64 },
        doc! { "_id": 5, "zip": ["10020-1234", 10020] },
        doc! { "_id": 6 },
    ]);
    assert_eq!(ids(&c, doc! { "zip": { "$type": 2 } }), [1, 5]);
    assert_eq!(ids(&c, doc! { "zip": { "$type": "string" } }), [1, 5]);
    assert_eq!(ids(&c, doc! { "zip": { "$type": "double" } }), [2]);
    assert_eq!(ids(&c, doc! { "zip": { "$type": "number" } }), [2, 3, 4, 5]);
    assert_eq!(
        ids(&c, doc! { "zip": { "$type": ["long", "int"] } }),
        [3, 4, 5]
    );
    assert_eq!(ids(&c, doc! { "zip": { "$type": "array" } }), [5]);
}

/// Equality with `null` matches a null value and a missing field; `$exists: true` matches a
/// null value too; `$type: "null"` only the null.
#[test]
fn null_missing_and_exists() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "item": Bson::Null },
        doc! { "_id": 2 },
        doc! { "_id": 3, "item": "x" },
    ]);
    assert_eq!(ids(&c, doc! { "item": Bson::Null }), [1, 2]);
    assert_eq!(ids(&c, doc! { "item": { "$exists": true } }), [1, 3]);
    assert_eq!(ids(&c, doc! { "item": { "$exists": false } }), [2]);
    assert_eq!(ids(&c, doc! { "item": { "$type": "null" } }), [1]);
    // $ne and $nin match documents without the field.
    assert_eq!(ids(&c, doc! { "item": { "$ne": "x" } }), [1, 2]);
    assert_eq!(
        ids(&c, doc! { "item": { "$nin": ["x", Bson::Null] } }),
        Vec::<i32>::new()
    );
    assert_eq!(ids(&c, doc! { "item": { "$nin": ["y"] } }), [1, 2, 3]);
}

/// Arrays: a scalar operand matches any element; an array operand the whole array, in order;
/// `$all` every listed element in any order; `$size` the length; `$elemMatch` one element
/// satisfying every condition (where plain conditions may be met by different elements).
#[test]
fn arrays_all_size_and_elem_match() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "tags": ["blank", "red"], "dim": [14, 21] },
        doc! { "_id": 2, "tags": ["red", "blank"], "dim": [22.85, 30] },
        doc! { "_id": 3, "tags": ["red", "blank", "plain"], "dim": [10, 15.25] },
        doc! { "_id": 4, "tags": ["blue"], "dim": [8, 26] },
    ]);
    assert_eq!(ids(&c, doc! { "tags": ["red", "blank"] }), [2]);
    assert_eq!(ids(&c, doc! { "tags": "red" }), [1, 2, 3]);
    assert_eq!(
        ids(&c, doc! { "tags": { "$all": ["red", "blank"] } }),
        [1, 2, 3]
    );
    assert_eq!(ids(&c, doc! { "tags": { "$size": 3 } }), [3]);
    // Some element > 15 and some element < 20 (maybe different ones) ...
    assert_eq!(ids(&c, doc! { "dim": { "$gt": 15, "$lt": 20 } }), [1, 3, 4]);
    // ... against one element in (15, 20): only 15.25.
    assert_eq!(
        ids(
            &c,
            doc! { "dim": { "$elemMatch": { "$gt": 15, "$lt": 20 } } }
        ),
        [3]
    );
    assert_eq!(
        ids(
            &c,
            doc! { "dim": { "$elemMatch": { "$gt": 22, "$lt": 30 } } }
        ),
        [2, 4]
    );
}

/// `$elemMatch` on arrays of documents: one result must have both the product and the score.
#[test]
fn elem_match_on_documents() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "results": [{ "product": "abc", "score": 10 }, { "product": "xyz", "score": 5 }] },
        doc! { "_id": 2, "results": [{ "product": "abc", "score": 8 }, { "product": "xyz", "score": 7 }] },
        doc! { "_id": 3, "results": [{ "product": "abc", "score": 7 }, { "product": "xyz", "score": 8 }] },
    ]);
    assert_eq!(
        ids(
            &c,
            doc! { "results": { "$elemMatch": { "product": "xyz", "score": { "$gte": 8 } } } }
        ),
        [3]
    );
    // Without $elemMatch, the conditions may hold on different elements.
    assert_eq!(
        ids(
            &c,
            doc! { "results.product": "xyz", "results.score": { "$gte": 8 } }
        ),
        [1, 2, 3]
    );
}

/// `$mod` keeps the values with that remainder; `$in` takes regular expressions; `$not`
/// negates an operator and also matches documents without the field; `$nor` matches what
/// fails every clause, missing fields included.
#[test]
fn mod_in_not_and_nor() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "item": "abc123", "qty": 0, "price": 1.99, "sale": true },
        doc! { "_id": 2, "item": "xyz123", "qty": 5, "price": 1.99 },
        doc! { "_id": 3, "item": "ijk123", "qty": 12, "sale": false },
        doc! { "_id": 4, "qty": 20 },
        doc! { "_id": 5, "item": "pqr", "price": 2.5, "sale": true },
    ]);
    assert_eq!(ids(&c, doc! { "qty": { "$mod": [4, 0] } }), [1, 3, 4]);
    assert_eq!(
        ids(
            &c,
            doc! { "item": { "$in": [regex("^a", ""), regex("^X", "i")] } }
        ),
        [1, 2]
    );
    assert_eq!(
        ids(&c, doc! { "item": { "$not": regex("^p", "") } }),
        [1, 2, 3, 4]
    );
    assert_eq!(
        ids(&c, doc! { "qty": { "$not": { "$gt": 10 } } }),
        [1, 2, 5]
    );
    assert_eq!(
        ids(&c, doc! { "$nor": [{ "price": 1.99 }, { "sale": true }] }),
        [3, 4]
    );
    assert_eq!(
        ids(
            &c,
            doc! { "$or": [{ "qty": { "$lt": 5 } }, { "price": { "$gt": 2 } }] }
        ),
        [1, 5]
    );
}

/// Comparisons apply within a type: `$gt: 20` does not match strings; `$regex` with options
/// (`i` case-insensitive, `m` multi-line anchors) matches strings only.
#[test]
fn comparisons_stay_within_a_type_and_regex_options() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "qty": 25, "sku": "abc123", "d": "First line\nSecond line" },
        doc! { "_id": 2, "qty": "30", "sku": "abc789", "d": "Single line" },
        doc! { "_id": 3, "qty": 15, "sku": "xyz456", "d": "Many spaces before     line" },
        doc! { "_id": 4, "qty": 35.5, "sku": "XYZ789", "d": "Multiple\nline description" },
    ]);
    assert_eq!(ids(&c, doc! { "qty": { "$gt": 20 } }), [1, 4]);
    assert_eq!(ids(&c, doc! { "sku": { "$regex": "789$" } }), [2, 4]);
    assert_eq!(
        ids(&c, doc! { "sku": { "$regex": "^ABC", "$options": "i" } }),
        [1, 2]
    );
    assert_eq!(
        ids(&c, doc! { "d": { "$regex": "^S", "$options": "m" } }),
        [1, 2]
    );
    assert_eq!(ids(&c, doc! { "d": { "$regex": "^S" } }), [2]);
}

/// `$expr` compares two fields of one document.
#[test]
fn expr_compares_fields() {
    let (_d, _db, c) = collection(&[
        doc! { "_id": 1, "category": "food", "budget": 400, "spent": 450 },
        doc! { "_id": 2, "category": "drinks", "budget": 100, "spent": 150 },
        doc! { "_id": 3, "category": "clothes", "budget": 100, "spent": 50 },
        doc! { "_id": 4, "category": "misc", "budget": 500, "spent": 300 },
        doc! { "_id": 5, "category": "travel", "budget": 200, "spent": 650 },
    ]);
    assert_eq!(
        ids(&c, doc! { "$expr": { "$gt": ["$spent", "$budget"] } }),
        [1, 2, 5]
    );
    assert_eq!(
        ids(
            &c,
            doc! { "$expr": { "$lt": [{ "$cond": { "if": { "$gte": ["$budget", 200] }, "then": { "$multiply": ["$budget", 2] }, "else": "$budget" } }, "$spent"] } }
        ),
        [2, 5]
    );
}
