//! How datafusion-distributed splits tscoll's leaves over remote shards: one task per shard
//! the query reads (`shard_task_count`), each task given a copy of the leaf that reads its
//! shard alone (`split_by_shard`, a `DistributedLeafExec` of one variant per task), and each
//! task sent to the worker holding its shard (`route_to_shards`). A stage with more tasks
//! than shards (another leaf in it wanted more) gives the extra tasks a leaf of no shard,
//! which returns nothing, and sends them round the workers.

use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedLeafExec, RouteTasksEvent,
    RouteTasksEventResponse, ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse,
};
use tscoll_datafusion::{CollectionScan, Shards, WindowAggregateExec};
use url::Url;

/// The shards a leaf over remote shards reads, in task order; `None` for other plans.
pub(crate) fn leaf_shards(plan: &dyn ExecutionPlan) -> Option<Vec<usize>> {
    let shards = if let Some(scan) = plan.downcast_ref::<CollectionScan>() {
        scan.shards()
    } else if let Some(agg) = plan.downcast_ref::<WindowAggregateExec>() {
        agg.shards()
    } else {
        return None;
    };
    match shards {
        Shards::Remote { shards, .. } => Some(shards.clone()),
        Shards::Local(_) => None,
    }
}

/// The copy of leaf `plan` that reads only `shards`.
fn leaf_with(plan: &dyn ExecutionPlan, shards: Vec<usize>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(scan) = plan.downcast_ref::<CollectionScan>() {
        Ok(Arc::new(scan.with_shards(shards)?))
    } else if let Some(agg) = plan.downcast_ref::<WindowAggregateExec>() {
        Ok(Arc::new(agg.with_shards(shards)?))
    } else {
        Err(DataFusionError::Internal(format!(
            "{} is not a leaf over remote shards",
            plan.name()
        )))
    }
}

/// One task per shard read (at least one).
pub(crate) fn shard_task_count(
    ev: DesiredTaskCountEvent<'_>,
) -> Option<Result<DesiredTaskCountEventResponse>> {
    let shards = leaf_shards(ev.plan.as_ref())?;
    Some(Ok(DesiredTaskCountEventResponse::desired(
        shards.len().max(1),
    )))
}

/// Task `i` reads the `i`-th shard of the leaf; tasks past the shards read none.
pub(crate) fn split_by_shard(
    ev: ScaleUpLeafNodeEvent<'_>,
) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let shards = leaf_shards(ev.plan.as_ref())?;
    Some((|| {
        if ev.task_count < shards.len() {
            return Err(DataFusionError::Plan(format!(
                "a query over {} shards needs as many workers, not {}: each shard is read \
                 where it is held",
                shards.len(),
                ev.task_count
            )));
        }
        let variants = (0..ev.task_count)
            .map(|i| {
                leaf_with(
                    ev.plan.as_ref(),
                    shards.get(i).copied().into_iter().collect(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let leaf = DistributedLeafExec::try_new(Arc::clone(ev.plan), variants)?;
        Ok(ScaleUpLeafNodeEventResponse::new(Arc::new(leaf)))
    })())
}

/// The workers of a cluster, in shard order, as the coordinator's routing sees them.
#[derive(Debug, Clone)]
pub(crate) struct ShardWorkers(pub(crate) Vec<Url>);

/// Sends the task that reads shard `s` to the worker of shard `s`; tasks of no shard go
/// round the workers.
pub(crate) fn route_to_shards(
    workers: &ShardWorkers,
    ev: &RouteTasksEvent<'_>,
) -> Option<Result<RouteTasksEventResponse>> {
    let mut found: Option<Vec<Vec<usize>>> = None;
    let walk = ev.plan.apply(|node| {
        if let Some(leaf) = node.downcast_ref::<DistributedLeafExec>()
            && leaf_shards(leaf.original().as_ref()).is_some()
        {
            found = Some(
                leaf.variants()
                    .iter()
                    .map(|v| leaf_shards(v.as_ref()).unwrap_or_default())
                    .collect(),
            );
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if let Err(e) = walk {
        return Some(Err(e));
    }
    let per_task = found?;
    let n = workers.0.len();
    if n == 0 {
        return Some(Err(DataFusionError::Plan("a cluster of no worker".into())));
    }
    let mut urls = Vec::with_capacity(ev.task_count);
    for i in 0..ev.task_count {
        let url = match per_task.get(i).and_then(|s| s.first()) {
            Some(&shard) => match workers.0.get(shard) {
                Some(u) => u.clone(),
                None => {
                    return Some(Err(DataFusionError::Plan(format!(
                        "shard {shard} of a cluster of {n} workers"
                    ))));
                }
            },
            None => workers.0[i % n].clone(),
        };
        urls.push(url);
    }
    Some(Ok(RouteTasksEventResponse::new(urls)))
}
