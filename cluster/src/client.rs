//! A coordinator's connection to one worker's Flight service: commands, descriptions,
//! writes and whole leaves (`protocol.rs`). Every error names the worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{Action, FlightData, FlightDescriptor, Ticket};
use bson::{Document, doc};
use datafusion::arrow::array::RecordBatch;
use datafusion_distributed::grpc::BoxCloneSyncChannel;
use futures::{StreamExt, TryStreamExt};
use url::Url;

use crate::Error;
use crate::channels::Channels;
use crate::protocol::{self, Address};

/// How long a connection to a worker may take before the worker counts as down.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest message taken from a worker (bytes).
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// One worker's Flight service, as shard `at.shard` of `at.shards`.
#[derive(Clone)]
pub(crate) struct WorkerClient {
    pub(crate) url: Url,
    pub(crate) at: Address,
    client: FlightServiceClient<BoxCloneSyncChannel>,
}

impl WorkerClient {
    /// A lazy connection to `url` through `channels` (it is made by the first call).
    pub(crate) fn new(url: &Url, at: Address, channels: &Channels) -> Result<WorkerClient, Error> {
        let client = FlightServiceClient::new(channels.lazy(url)?)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        Ok(WorkerClient {
            url: url.clone(),
            at,
            client,
        })
    }

    fn fail(&self, status: &tonic::Status) -> Error {
        let message = if status.code() == tonic::Code::Unavailable {
            format!("unreachable: {}", status.message())
        } else {
            status.message().to_owned()
        };
        Error::worker(&self.url, message)
    }

    /// Runs action `kind` with `msg` (the shard address added) and returns its reply.
    async fn action(&self, kind: &str, mut msg: Document) -> Result<Document, Error> {
        self.at.write(&mut msg);
        let mut client = self.client.clone();
        let mut replies = client
            .do_action(Action {
                r#type: kind.to_owned(),
                body: protocol::bytes(&msg).into(),
            })
            .await
            .map_err(|s| self.fail(&s))?
            .into_inner();
        let reply = replies
            .message()
            .await
            .map_err(|s| self.fail(&s))?
            .ok_or_else(|| Error::worker(&self.url, "no reply"))?;
        protocol::read(&reply.body).map_err(|e| Error::worker(&self.url, e))
    }

    /// The worker's collections (`describe`).
    pub(crate) async fn describe(&self) -> Result<Document, Error> {
        self.action(protocol::DESCRIBE, Document::new()).await
    }

    /// Runs MongoDB command `command` on the shard; `assign` gives the worker its shard
    /// number when it has none; `shard_key` is recorded for a `create`.
    pub(crate) async fn command(
        &self,
        command: &Document,
        assign: bool,
        shard_key: Option<&str>,
    ) -> Result<Document, Error> {
        let mut msg = doc! { "command": command.clone(), "assign": assign };
        if let Some(k) = shard_key {
            msg.insert("shardKey", k);
        }
        self.action(protocol::COMMAND, msg).await
    }

    /// Sends `batches` to collection `collection` of the shard; one reply per batch
    /// (`{inserted, errors}`, positions counted over all the batches).
    pub(crate) async fn put(
        &self,
        collection: &str,
        batches: Vec<RecordBatch>,
        options: &tscoll_engine::InsertOptions,
    ) -> Result<Vec<Document>, Error> {
        let descriptor =
            protocol::put_descriptor(self.at, collection, options, protocol::FORMAT_ARROW);
        let data = FlightDataEncoderBuilder::new()
            .with_flight_descriptor(Some(FlightDescriptor::new_cmd(protocol::bytes(
                &descriptor,
            ))))
            .with_max_flight_data_size(MAX_MESSAGE_BYTES / 4)
            .build(futures::stream::iter(batches.into_iter().map(Ok)))
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<FlightData>, _>>()
            .map_err(|e| Error::worker(&self.url, e))?;
        self.put_messages(data).await
    }

    /// Sends `messages` (each a run of BSON documents) to collection `collection` of the
    /// shard; one reply per message, as [`Self::put`].
    pub(crate) async fn put_documents(
        &self,
        collection: &str,
        messages: Vec<Vec<u8>>,
        options: &tscoll_engine::InsertOptions,
    ) -> Result<Vec<Document>, Error> {
        let descriptor =
            protocol::put_descriptor(self.at, collection, options, protocol::FORMAT_BSON);
        let data: Vec<FlightData> = messages
            .into_iter()
            .enumerate()
            .map(|(i, body)| {
                let m = FlightData::new().with_data_body(body);
                if i == 0 {
                    m.with_descriptor(FlightDescriptor::new_cmd(protocol::bytes(&descriptor)))
                } else {
                    m
                }
            })
            .collect();
        self.put_messages(data).await
    }

    /// Sends the messages of one `do_put` and reads its replies.
    async fn put_messages(&self, data: Vec<FlightData>) -> Result<Vec<Document>, Error> {
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let data = futures::stream::iter(data);
        let mut client = self.client.clone();
        let mut replies = client
            .do_put(data)
            .await
            .map_err(|s| self.fail(&s))?
            .into_inner();
        let mut out = Vec::new();
        while let Some(r) = replies.message().await.map_err(|s| self.fail(&s))? {
            out.push(protocol::read(&r.app_metadata).map_err(|e| Error::worker(&self.url, e))?);
        }
        Ok(out)
    }

    /// Runs the leaf `plan` (bytes of `codec::encode_plan`) on the shard and streams
    /// partition `partition` of it; `received` counts the bytes of the messages received.
    pub(crate) async fn get(
        &self,
        plan: Vec<u8>,
        partition: usize,
        received: Arc<AtomicU64>,
    ) -> Result<FlightRecordBatchStream, Error> {
        let mut msg = doc! {
            "plan": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: plan },
            "partition": protocol::int(partition),
        };
        self.at.write(&mut msg);
        let mut client = self.client.clone();
        let stream = client
            .do_get(Ticket {
                ticket: protocol::bytes(&msg).into(),
            })
            .await
            .map_err(|s| self.fail(&s))?
            .into_inner();
        let counted = stream.map_ok(move |m| {
            let n = m.data_header.len() + m.data_body.len() + m.app_metadata.len();
            received.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
            m
        });
        Ok(FlightRecordBatchStream::new_from_flight_data(
            counted.map_err(|e| arrow_flight::error::FlightError::Tonic(Box::new(e))),
        ))
    }
}
