//! The plans a coordinator sends its workers, as bytes: the leaves over remote shards
//! (`CollectionScan`, `WindowAggregateExec`), each as its own BSON (tscoll-datafusion's
//! `encode`/`decode`) after a one-byte tag. Registered on both sides (the coordinator's
//! session and each worker's).

use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use tscoll_datafusion::{CollectionScan, WindowAggregateExec};

/// The tag of a `CollectionScan`.
const SCAN: u8 = 1;
/// The tag of a `WindowAggregateExec`.
const WINDOW_AGGREGATE: u8 = 2;

/// The codec of tscoll's leaves over remote shards.
#[derive(Debug, Default, Clone, Copy)]
pub struct ShardPlanCodec;

/// `plan` as the bytes [`decode_plan`] reads.
///
/// # Errors
/// `Internal` for a plan that is not a leaf over remote shards.
pub fn encode_plan(plan: &dyn ExecutionPlan) -> Result<Vec<u8>> {
    let (tag, body) = if let Some(scan) = plan.downcast_ref::<CollectionScan>() {
        (SCAN, scan.encode()?)
    } else if let Some(agg) = plan.downcast_ref::<WindowAggregateExec>() {
        (WINDOW_AGGREGATE, agg.encode()?)
    } else {
        return Err(DataFusionError::Internal(format!(
            "{} is not a plan tscoll sends to its workers",
            plan.name()
        )));
    };
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(tag);
    out.extend_from_slice(&body);
    Ok(out)
}

/// The plan [`encode_plan`] wrote.
///
/// # Errors
/// `Internal` when the bytes are not such a plan.
pub fn decode_plan(bytes: &[u8]) -> Result<Arc<dyn ExecutionPlan>> {
    match bytes.split_first() {
        Some((&SCAN, body)) => Ok(Arc::new(CollectionScan::decode(body)?)),
        Some((&WINDOW_AGGREGATE, body)) => Ok(Arc::new(WindowAggregateExec::decode(body)?)),
        Some((tag, _)) => Err(DataFusionError::Internal(format!(
            "a plan of unknown kind {tag} (a worker of another version?)"
        ))),
        None => Err(DataFusionError::Internal("an empty plan".into())),
    }
}

impl PhysicalExtensionCodec for ShardPlanCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return Err(DataFusionError::Internal(
                "tscoll's shard plans are leaves".into(),
            ));
        }
        decode_plan(buf)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        buf.extend_from_slice(&encode_plan(node.as_ref())?);
        Ok(())
    }
}
