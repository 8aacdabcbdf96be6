//! The optimizer rule that lets the collections answer aggregates: an `Aggregate` over a
//! collection scan, grouped by a time window (`date_bin` with a fixed interval from the
//! epoch, or `date_trunc` to a second, minute, hour or day) and by expressions of the meta
//! field, with `count`, `sum`, `avg`, `min` and `max` of measurement fields and filtered on
//! the time and meta fields, becomes an aggregate over the collections' partial aggregates
//! per series and window ([`WindowAggregate`]): buckets wholly inside a window are read off
//! their control records and bucket sums, the rest decoded, and DataFusion merges the
//! partials per SQL group (a series' rows all carry its meta value, so any expression of
//! the meta field groups and filters the partials as it would the rows).
//!
//! Anything else is left to DataFusion's own plan: other aggregate functions, `DISTINCT` or
//! `FILTER` in an aggregate, filters on measurement fields, other groupings, `min`/`max` of
//! doubles (SQL orders NaN above every number, MongoDB below), a limit under the aggregate.

use std::collections::HashMap;
use std::sync::Arc;

use bson::Document;
use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::default_table_source::{provider_as_source, source_as_provider};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::functions_aggregate::expr_fn::{max, min, sum};
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    Aggregate, Cast, Expr, LogicalPlan, LogicalPlanBuilder, TableScan, TryCast, cast, lit, when,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use tscoll_engine::{Accumulator, AggregateSpec};

use crate::aggregate::WindowAggregate;
use crate::filter::to_filter;
use crate::table::CollectionTable;

/// The window of an aggregate without a time grouping: every bucket but those spanning
/// the epoch or ±2^62 ms lies in one.
const ONE_WINDOW_MS: i64 = 1 << 62;

/// Rewrites aggregates over collections into aggregates over their windowed partial
/// aggregates (SPEC: aggregates answered from control fields where possible; see
/// the module docs for what is rewritten). `register_database` adds it to the context.
#[derive(Debug, Default)]
pub struct WindowAggregateRule;

/// The name of [`WindowAggregateRule`] among the optimizer's rules.
pub const RULE_NAME: &str = "tscoll_window_aggregate";

impl OptimizerRule for WindowAggregateRule {
    fn name(&self) -> &str {
        RULE_NAME
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Aggregate(agg) = &plan else {
            return Ok(Transformed::no(plan));
        };
        match rewrite(agg)? {
            Some(new) => Ok(Transformed::yes(new)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// The nodes between an aggregate and its scan.
enum Node<'a> {
    Projection(&'a datafusion::logical_expr::Projection),
    Filter(&'a Expr),
}

/// Replaces the columns of `expr` that `projection` outputs by the projection's
/// expressions for them.
fn inline(expr: Expr, projection: &datafusion::logical_expr::Projection) -> Result<Expr> {
    let outputs: HashMap<Column, &Expr> = projection
        .schema
        .columns()
        .into_iter()
        .zip(&projection.expr)
        .collect();
    expr.transform_up(|e| match &e {
        Expr::Column(c) => match outputs.get(c) {
            Some(inner) => Ok(Transformed::yes((*inner).clone().unalias())),
            None => Ok(Transformed::no(e)),
        },
        _ => Ok(Transformed::no(e)),
    })
    .data()
}

/// `expr` inlined through the projections `nodes` (top first) down to the scan.
fn to_scan(mut expr: Expr, nodes: &[Node<'_>]) -> Result<Expr> {
    for n in nodes {
        if let Node::Projection(p) = n {
            expr = inline(expr, p)?;
        }
    }
    Ok(expr)
}

/// `expr` without the aliases around it.
fn strip_alias(mut expr: &Expr) -> &Expr {
    while let Expr::Alias(a) = expr {
        expr = &a.expr;
    }
    expr
}

/// The time column, possibly cast to another timestamp unit in UTC.
fn is_time(expr: &Expr, time: &str) -> bool {
    match expr {
        Expr::Column(c) => c.name == time,
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            matches!(field.data_type(), DataType::Timestamp(_, tz)
                if tz.as_deref().is_none_or(|z| z == "UTC" || z == "+00:00"))
                && is_time(expr, time)
        }
        _ => false,
    }
}

/// The window length (ms) of a time grouping: `date_bin(interval, time)` (with an origin
/// on a multiple of the interval from the epoch, if given) or `date_trunc(unit, time)` for
/// a second, minute, hour or day.
fn window_of(expr: &Expr, time: &str) -> Option<i64> {
    let Expr::ScalarFunction(ScalarFunction { func, args }) = expr else {
        return None;
    };
    match (func.name(), args.as_slice()) {
        ("date_bin", [Expr::Literal(interval, _), t, rest @ ..]) if is_time(t, time) => {
            let ms = match interval {
                ScalarValue::IntervalMonthDayNano(Some(v)) if v.months == 0 => {
                    if v.nanoseconds % 1_000_000 != 0 {
                        return None;
                    }
                    i64::from(v.days)
                        .checked_mul(86_400_000)?
                        .checked_add(v.nanoseconds / 1_000_000)?
                }
                ScalarValue::IntervalDayTime(Some(v)) => i64::from(v.days)
                    .checked_mul(86_400_000)?
                    .checked_add(i64::from(v.milliseconds))?,
                _ => return None,
            };
            if ms <= 0 {
                return None;
            }
            match rest {
                [] => Some(ms),
                [Expr::Literal(origin, _)] => {
                    let origin_ms = match origin {
                        ScalarValue::TimestampNanosecond(Some(n), _) if n % 1_000_000 == 0 => {
                            n / 1_000_000
                        }
                        ScalarValue::TimestampMicrosecond(Some(n), _) if n % 1000 == 0 => n / 1000,
                        ScalarValue::TimestampMillisecond(Some(n), _) => *n,
                        ScalarValue::TimestampSecond(Some(n), _) => n.checked_mul(1000)?,
                        ScalarValue::Utf8(Some(text)) | ScalarValue::Utf8View(Some(text)) => {
                            let n = string_to_timestamp_nanos(text).ok()?;
                            if n % 1_000_000 != 0 {
                                return None;
                            }
                            n / 1_000_000
                        }
                        _ => return None,
                    };
                    (origin_ms.rem_euclid(ms) == 0).then_some(ms)
                }
                _ => None,
            }
        }
        ("date_trunc", [Expr::Literal(unit, _), t]) if is_time(t, time) => {
            let unit = match unit {
                ScalarValue::Utf8(Some(u))
                | ScalarValue::LargeUtf8(Some(u))
                | ScalarValue::Utf8View(Some(u)) => u.to_ascii_lowercase(),
                _ => return None,
            };
            match unit.as_str() {
                "second" => Some(1000),
                "minute" => Some(60_000),
                "hour" => Some(3_600_000),
                "day" => Some(86_400_000),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The field an aggregate argument reads (a column, possibly widened: int32 to int64,
/// integers to double) and the argument's type.
fn field_arg<'s>(expr: &Expr, schema: &'s Schema) -> Option<(&'s Field, DataType)> {
    match expr {
        Expr::Column(c) => {
            let f = schema.field_with_name(&c.name).ok()?;
            Some((f, f.data_type().clone()))
        }
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            let (f, from) = field_arg(expr, schema)?;
            let to = field.data_type();
            let widens = from == *to
                || matches!(
                    (&from, to),
                    (DataType::Int32, DataType::Int64)
                        | (DataType::Int32 | DataType::Int64, DataType::Float64)
                );
            widens.then(|| (f, to.clone()))
        }
        _ => None,
    }
}

/// One SQL aggregate: the partials it takes from the collections and how the merged
/// partials make its value.
struct Plan {
    /// `(accumulator, column type)` of each partial.
    partials: Vec<(Accumulator, DataType)>,
    /// The SQL value from the merged partials' columns (in `partials` order).
    finish: Finish,
}

enum Finish {
    /// `count`: the sum of the counts, 0 when none.
    Count,
    /// `sum`: the sum of the sums, null when no number was summed.
    Sum,
    /// `avg`: the sum of the sums over the sum of the counts of numbers.
    Avg,
    /// `min` / `max`: of the partial extremes.
    Min,
    Max,
}

/// How the collections answer the aggregate `expr` (over the scan's columns), if they can.
fn plan_of(expr: &Expr, schema: &Schema, time: &str, meta: Option<&str>) -> Option<Plan> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return None;
    };
    if params.distinct || params.filter.is_some() || !params.order_by.is_empty() {
        return None;
    }
    let name = func.name();
    let [arg] = params.args.as_slice() else {
        return None;
    };
    if name == "count" && matches!(arg, Expr::Literal(v, _) if !v.is_null()) {
        return Some(Plan {
            partials: vec![(Accumulator::Count, DataType::Int64)],
            finish: Finish::Count,
        });
    }
    let (field, ty) = field_arg(arg, schema)?;
    let f = field.name().clone();
    if Some(f.as_str()) == meta || f == time && name != "min" && name != "max" {
        return None;
    }
    let numbers = matches!(ty, DataType::Int32 | DataType::Int64 | DataType::Float64);
    let ints = matches!(ty, DataType::Int32 | DataType::Int64);
    let count = (Accumulator::CountNumbers(f.clone()), DataType::Int64);
    Some(match name {
        "count" if numbers => Plan {
            partials: vec![count],
            finish: Finish::Count,
        },
        "sum" if ints => Plan {
            partials: vec![(Accumulator::SumTyped(f), DataType::Int64), count],
            finish: Finish::Sum,
        },
        "sum" if numbers => Plan {
            partials: vec![(Accumulator::Sum(f), DataType::Float64), count],
            finish: Finish::Sum,
        },
        "avg" if numbers => Plan {
            partials: vec![(Accumulator::Sum(f), DataType::Float64), count],
            finish: Finish::Avg,
        },
        "min" | "max" if ints || matches!(ty, DataType::Timestamp(TimeUnit::Millisecond, _)) => {
            let acc = if name == "min" {
                Accumulator::Min(f)
            } else {
                Accumulator::Max(f)
            };
            Plan {
                partials: vec![(acc, ty)],
                finish: if name == "min" {
                    Finish::Min
                } else {
                    Finish::Max
                },
            }
        }
        _ => return None,
    })
}

/// The column of partial `k` of aggregate `i` in the partials' table.
fn partial_name(i: usize, k: usize) -> String {
    format!("__tscoll_partial_{i}_{k}")
}

/// The aggregate over the collections' partial aggregates that gives `agg`'s result, or
/// `None` when the collections cannot answer it.
fn rewrite(agg: &Aggregate) -> Result<Option<LogicalPlan>> {
    // The nodes down to the scan: projections and filters only.
    let mut nodes = Vec::new();
    let mut at = agg.input.as_ref();
    let scan: &TableScan = loop {
        match at {
            LogicalPlan::Projection(p) => {
                nodes.push(Node::Projection(p));
                at = p.input.as_ref();
            }
            LogicalPlan::Filter(f) => {
                nodes.push(Node::Filter(&f.predicate));
                at = f.input.as_ref();
            }
            LogicalPlan::TableScan(s) => break s,
            _ => return Ok(None),
        }
    };
    if scan.fetch.is_some() {
        return Ok(None);
    }
    let Ok(provider) = source_as_provider(&scan.source) else {
        return Ok(None);
    };
    let Some(table) = provider.downcast_ref::<CollectionTable>() else {
        return Ok(None);
    };
    let schema = table.schema.as_ref();
    let time = schema.field(0).name().clone();
    let meta = table.meta_field.as_deref();
    let only = |e: &Expr, allowed: &[&str]| {
        e.column_refs()
            .iter()
            .all(|c| allowed.contains(&c.name.as_str()))
    };
    let meta_only = |e: &Expr| meta.is_some_and(|m| only(e, &[m]));

    // Filters: on the meta field (applied to the partials, and pushed down when they
    // translate, to choose buckets) and comparisons of the time field with constants.
    // The scan's own filters are there too: those it applies exactly have no Filter node.
    let mut meta_predicates = Vec::new();
    let mut clauses: Vec<Document> = Vec::new();
    let mut predicates = scan.filters.clone();
    for (i, node) in nodes.iter().enumerate() {
        if let Node::Filter(predicate) = node {
            predicates.push(to_scan((*predicate).clone(), &nodes[i + 1..])?);
        }
    }
    for predicate in &predicates {
        for conjunct in split_conjunction(predicate) {
            if meta_only(conjunct) {
                meta_predicates.push(conjunct.clone());
                clauses.extend(to_filter(conjunct, schema));
            } else if only(conjunct, &[time.as_str()]) {
                let Some(clause) = to_filter(conjunct, schema) else {
                    return Ok(None);
                };
                clauses.push(clause);
            } else {
                return Ok(None);
            }
        }
    }

    // Groups: at most one time window, the rest expressions of the meta field.
    let mut window_ms = None;
    let mut by_series = !meta_predicates.is_empty();
    let mut groups = Vec::with_capacity(agg.group_expr.len());
    for g in &agg.group_expr {
        if matches!(g, Expr::GroupingSet(_)) {
            return Ok(None);
        }
        let g = to_scan(g.clone(), &nodes)?;
        if meta_only(&g) {
            by_series = true;
        } else if let Some(ms) = window_of(strip_alias(&g), &time) {
            if window_ms.is_some_and(|w| w != ms) {
                return Ok(None);
            }
            window_ms = Some(ms);
        } else {
            return Ok(None);
        }
        groups.push(g);
    }

    // Aggregates.
    let mut plans = Vec::with_capacity(agg.aggr_expr.len());
    for a in &agg.aggr_expr {
        let a = to_scan(a.clone().unalias(), &nodes)?;
        match plan_of(&a, schema, &time, meta) {
            Some(p) => plans.push(p),
            None => return Ok(None),
        }
    }

    // The partials' table: window start, meta value (by series), partial columns.
    let mut fields = vec![schema.field(0).clone()];
    if by_series {
        let Some(m) = meta.and_then(|m| schema.field_with_name(m).ok()) else {
            return Ok(None);
        };
        fields.push(m.clone());
    }
    let mut outputs = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        for (k, (acc, ty)) in p.partials.iter().enumerate() {
            let name = partial_name(i, k);
            fields.push(Field::new(&name, ty.clone(), true));
            outputs.push((name, acc.clone()));
        }
    }
    let filter = match clauses.len() {
        0 => Document::new(),
        1 => clauses.pop().unwrap_or_default(),
        _ => bson::doc! { "$and": clauses },
    };
    let partials = WindowAggregate {
        shards: table.shards.clone(),
        filter,
        spec: AggregateSpec {
            window_ms: window_ms.unwrap_or(ONE_WINDOW_MS),
            by_series,
            outputs,
        },
        schema: Arc::new(Schema::new(fields)),
    };
    let mut builder = LogicalPlanBuilder::scan(
        scan.table_name.clone(),
        provider_as_source(Arc::new(partials)),
        None,
    )?;
    if let Some(p) = meta_predicates.into_iter().reduce(Expr::and) {
        builder = builder.filter(p)?;
    }
    // Merge the partials per SQL group.
    let column = |i: usize, k: usize| {
        Expr::Column(Column::new(
            Some(scan.table_name.clone()),
            partial_name(i, k),
        ))
    };
    let mut merges = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        for k in 0..p.partials.len() {
            let merged = match p.finish {
                Finish::Min => min(column(i, k)),
                Finish::Max => max(column(i, k)),
                _ => sum(column(i, k)),
            };
            merges.push(merged.alias(format!("__tscoll_merged_{i}_{k}")));
        }
    }
    let n_groups = groups.len();
    let builder = builder.aggregate(groups, merges)?;
    let merged = builder.schema().columns();
    // The values, named as the original aggregate names its outputs.
    let mut exprs: Vec<Expr> = Vec::with_capacity(agg.schema.fields().len());
    for (i, c) in merged.iter().take(n_groups).enumerate() {
        let (q, f) = agg.schema.qualified_field(i);
        exprs.push(Expr::Column(c.clone()).alias_qualified(q.cloned(), f.name()));
    }
    let mut at = n_groups;
    for (i, p) in plans.iter().enumerate() {
        let m = |k: usize| Expr::Column(merged[at + k].clone());
        let value = match p.finish {
            Finish::Count => when(m(0).is_null(), lit(0_i64)).otherwise(m(0))?,
            Finish::Sum => when(
                m(1).eq(lit(0_i64)),
                lit(ScalarValue::try_from(
                    agg.schema.field(n_groups + i).data_type(),
                )?),
            )
            .otherwise(m(0))?,
            Finish::Avg => when(m(1).eq(lit(0_i64)), lit(ScalarValue::Float64(None)))
                .otherwise(m(0) / cast(m(1), DataType::Float64))?,
            Finish::Min | Finish::Max => m(0),
        };
        let (q, f) = agg.schema.qualified_field(n_groups + i);
        exprs.push(value.alias_qualified(q.cloned(), f.name()));
        at += p.partials.len();
    }
    let plan = builder.project(exprs)?.build()?;
    // The same columns as the aggregate replaced, or no rewrite.
    let same = plan.schema().fields().len() == agg.schema.fields().len()
        && plan
            .schema()
            .fields()
            .iter()
            .zip(agg.schema.fields())
            .all(|(a, b)| a.data_type() == b.data_type());
    Ok(same.then_some(plan))
}
