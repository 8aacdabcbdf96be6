//! A worker: one process holding one shard (a tscoll database), serving on one port
//! datafusion-distributed's worker service (the coordinator's query stages, with tscoll's
//! leaves over the shard) and an Arrow Flight service (writes, commands, descriptions and the
//! leaves a coordinator runs whole, `protocol.rs`).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use bson::{Bson, Document, doc};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{DistributedExt, Worker, WorkerQueryContext};
use futures::{Stream, StreamExt, TryStreamExt};
use tokio::sync::oneshot;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};
use tscoll_datafusion::ShardDatabase;
use tscoll_engine::arrow::RecordBatchOptions;
use tscoll_engine::{Database, InsertOptions};

use crate::Error;
use crate::auth::RequireToken;
use crate::channels::Channels;
use crate::codec::{ShardPlanCodec, decode_plan};
use crate::membership::MembershipFile;
use crate::protocol::{self, Address};

/// The largest message a worker takes (bytes): a write batch of many wide rows.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How a worker serves.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// The address to listen on (`127.0.0.1:7100`; port 0 picks a free one).
    pub listen: SocketAddr,
    /// The shared secret every request must carry; `None` accepts any request, which
    /// [`start`] allows on loopback addresses only.
    pub token: Option<Arc<str>>,
    /// The memory (bytes) the query stages running on this worker hold together: sorts and
    /// aggregates spill to temporary files beyond it (`tscoll_datafusion::bounded_context`);
    /// `None`: unbounded.
    pub memory_bytes: Option<usize>,
}

impl WorkerOptions {
    /// Whether [`start`] takes these options, checked before a database is opened for
    /// them (`tscoll worker`).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a non-loopback address without a token.
    pub fn check(&self) -> Result<(), Error> {
        if self.token.is_none() && !self.listen.ip().is_loopback() {
            return Err(Error::Invalid(format!(
                "a worker listening beyond loopback ({}) requires a token (--token-file): \
                 anyone who reaches the port could read and write the shard",
                self.listen
            )));
        }
        Ok(())
    }
}

/// A running worker ([`start`]).
pub struct WorkerHandle {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

impl std::fmt::Debug for WorkerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl WorkerHandle {
    /// The address the worker listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops taking requests, lets the ones under way finish, and returns.
    ///
    /// # Errors
    /// The server's own failure while it ran.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match (&mut self.task).await {
            Ok(r) => r.map_err(|e| Error::Io(std::io::Error::other(e))),
            Err(e) => Err(Error::Io(std::io::Error::other(e))),
        }
    }

    /// Waits until the server stops (it does not on its own: it runs until shut down).
    ///
    /// # Errors
    /// The server's own failure.
    pub async fn wait(mut self) -> Result<(), Error> {
        match (&mut self.task).await {
            Ok(r) => r.map_err(|e| Error::Io(std::io::Error::other(e))),
            Err(e) => Err(Error::Io(std::io::Error::other(e))),
        }
    }
}

/// Starts a worker serving `db` on `options.listen`, on the current tokio runtime.
///
/// # Errors
/// [`Error::Invalid`] for a non-loopback address without a token; [`Error::Io`] when the
/// address cannot be bound; [`Error::ShardFile`] when the database's shard file cannot be
/// read.
pub async fn start(db: Database, options: WorkerOptions) -> Result<WorkerHandle, Error> {
    options.check()?;
    let listener = tokio::net::TcpListener::bind(options.listen).await?;
    let addr = listener.local_addr()?;
    let router = routes(
        db,
        Channels::tcp(options.token.clone()),
        options.memory_bytes,
    )?;
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        router
            // No delay: replies are small writes, which Nagle's algorithm would hold back
            // until the peer's delayed acknowledgement (40 ms) on every round trip.
            .serve_with_incoming_shutdown(
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                async {
                    let _ = rx.await;
                },
            )
            .await
    });
    Ok(WorkerHandle {
        addr,
        shutdown: Some(tx),
        task,
    })
}

/// A worker's server: its services behind the token check.
pub(crate) type WorkerRouter = tonic::transport::server::Router<
    tower::layer::util::Stack<
        tonic::service::InterceptorLayer<RequireToken>,
        tower::layer::util::Identity,
    >,
>;

/// The worker's services on one server: datafusion-distributed's worker and the Flight
/// service, behind the token check.
pub(crate) fn routes(
    db: Database,
    channels: Channels,
    memory_bytes: Option<usize>,
) -> Result<WorkerRouter, Error> {
    let membership = Arc::new(MembershipFile::open(db.path())?);
    let shard = Arc::new(OnceLock::new());
    if let Some(s) = membership.get().shard {
        let _ = shard.set(s);
    }
    let flight = ShardFlight {
        db: db.clone(),
        membership,
        shard: Arc::clone(&shard),
    };
    let token = channels.token().cloned();
    let worker = query_worker(db, Arc::clone(&shard), channels, memory_bytes)?;
    let router = Server::builder()
        .layer(tonic::service::InterceptorLayer::new(RequireToken::new(
            token.as_deref(),
        )))
        .add_service(
            FlightServiceServer::new(flight)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(worker.into_worker_server());
    Ok(router)
}

/// datafusion-distributed's worker: query stages decoded with tscoll's codec, run in a
/// session holding the shard's database; the stages it reads from other workers are asked
/// through `channels` (with the cluster's token).
pub(crate) fn query_worker(
    db: Database,
    shard: Arc<OnceLock<usize>>,
    channels: Channels,
    memory_bytes: Option<usize>,
) -> Result<Worker, Error> {
    let bounded = memory_bytes
        .map(tscoll_datafusion::bounded_parts)
        .transpose()?;
    let batch_rows = bounded.as_ref().map(|(c, _)| c.batch_size());
    let worker = Worker::from_session_builder(move |ctx: WorkerQueryContext| {
        let mut builder: SessionStateBuilder = ctx.builder;
        let cfg = builder.config().get_or_insert_default();
        if let Some(rows) = batch_rows {
            *cfg = std::mem::take(cfg).with_batch_size(rows);
        }
        cfg.set_distributed_user_codec(ShardPlanCodec);
        cfg.set_distributed_channel_resolver(channels.clone());
        cfg.set_extension(Arc::new(ShardDatabase {
            database: db.clone(),
            shard: Arc::clone(&shard),
        }));
        async move { Ok(builder.build()) }
    });
    Ok(match bounded {
        Some((_, runtime)) => worker.with_runtime_env(runtime),
        None => worker,
    })
}

/// A part of a write: Arrow rows, or documents.
enum Part {
    Batch(datafusion::arrow::array::RecordBatch),
    Documents(Vec<Document>),
}

impl Part {
    fn rows(&self) -> usize {
        match self {
            Part::Batch(b) => b.num_rows(),
            Part::Documents(d) => d.len(),
        }
    }
}

/// The Flight service of a worker.
#[derive(Clone)]
struct ShardFlight {
    db: Database,
    membership: Arc<MembershipFile>,
    shard: Arc<OnceLock<usize>>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn bad_request(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(e.to_string())
}

impl ShardFlight {
    /// Checks that the message addresses this worker's shard (assigning it, when `assign`
    /// is set and it holds none).
    fn check(&self, at: Address, assign: bool) -> Result<(), Status> {
        self.membership
            .check(at.shard, at.shards, assign)
            .map_err(Status::failed_precondition)?;
        let _ = self.shard.set(at.shard);
        Ok(())
    }

    /// `describe`: the worker's collections, their options, shard keys and Arrow schemas.
    fn describe(&self, msg: &Document) -> Result<Document, Status> {
        let at = Address::read(msg).map_err(bad_request)?;
        let m = self.membership.get();
        if m.shard.is_some() {
            self.check(at, false)?;
        }
        let mut collections = Vec::new();
        for (name, spec) in self.db.list_collections().map_err(engine_status)? {
            let coll = self.db.collection(&name).map_err(engine_status)?;
            let schema = coll
                .arrow_schema(&Document::new(), None)
                .map_err(engine_status)?;
            let schema_bytes = tscoll_datafusion::schema_bytes(&schema)
                .map_err(|e| Status::internal(e.to_string()))?;
            let key = m.shard_keys.get(&name).cloned();
            collections.push(Bson::Document(doc! {
                "name": &name,
                "spec": spec.to_stored(),
                "shardKey": key.map_or(Bson::Null, Bson::String),
                "schema": schema_bytes,
            }));
        }
        let mut out = doc! { "collections": collections };
        if let (Some(s), Some(n)) = (m.shard, m.shards) {
            out.insert("shard", protocol::int(s));
            out.insert("shards", protocol::int(n));
        }
        Ok(out)
    }

    /// `command`: a command run on the shard (`commands.rs`).
    fn command(&self, msg: &Document) -> Result<Document, Status> {
        let at = Address::read(msg).map_err(bad_request)?;
        let assign = msg.get_bool("assign").unwrap_or(false);
        self.check(at, assign)?;
        let command = msg.get_document("command").map_err(bad_request)?.clone();
        let name = command.keys().next().cloned().unwrap_or_default();
        let target = command.get_str(&name).ok().map(str::to_owned);
        let key = msg.get_str("shardKey").ok().map(str::to_owned);
        let reply = crate::commands::run(&self.db, &command);
        let ok = reply.get_f64("ok").ok() == Some(1.0);
        if ok && let Some(coll) = target {
            match name.as_str() {
                "create" => self
                    .membership
                    .set_shard_key(&coll, key.as_deref())
                    .map_err(Status::internal)?,
                "drop" => self
                    .membership
                    .set_shard_key(&coll, None)
                    .map_err(Status::internal)?,
                _ => {}
            }
        }
        Ok(reply)
    }
}

fn engine_status(e: tscoll_engine::Error) -> Status {
    Status::internal(e.to_string())
}

#[tonic::async_trait]
impl FlightService for ShardFlight {
    type HandshakeStream = BoxStream<HandshakeResponse>;
    type ListFlightsStream = BoxStream<FlightInfo>;
    type DoGetStream = BoxStream<FlightData>;
    type DoPutStream = BoxStream<PutResult>;
    type DoExchangeStream = BoxStream<FlightData>;
    type DoActionStream = BoxStream<arrow_flight::Result>;
    type ListActionsStream = BoxStream<ActionType>;

    async fn handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        Err(Status::unimplemented(
            "handshake: send the token in each request",
        ))
    }

    async fn list_flights(
        &self,
        _request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        Err(Status::unimplemented("list_flights"))
    }

    async fn get_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Err(Status::unimplemented("get_flight_info"))
    }

    async fn poll_flight_info(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented("poll_flight_info"))
    }

    async fn get_schema(
        &self,
        _request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        Err(Status::unimplemented("get_schema"))
    }

    /// A leaf over this shard, run whole: its batches.
    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        let msg = protocol::read(&request.into_inner().ticket).map_err(bad_request)?;
        self.check(Address::read(&msg).map_err(bad_request)?, false)?;
        let plan = decode_plan(msg.get_binary_generic("plan").map_err(bad_request)?)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let partition = protocol::usize_of(&msg, "partition").map_err(bad_request)?;
        let config = SessionConfig::new().with_extension(Arc::new(ShardDatabase {
            database: self.db.clone(),
            shard: Arc::clone(&self.shard),
        }));
        let ctx = SessionContext::new_with_config(config);
        let stream = plan
            .execute(partition, ctx.task_ctx())
            .map_err(|e| Status::internal(e.to_string()))?;
        let batches = stream.map_err(|e| FlightError::ExternalError(Box::new(e)));
        // Dictionaries stay dictionaries: the coordinator's plan expects the leaf's schema.
        let out = FlightDataEncoderBuilder::new()
            .with_dictionary_handling(DictionaryHandling::Resend)
            .with_max_flight_data_size(MAX_MESSAGE_BYTES / 4)
            .build(batches)
            .map_err(|e| Status::internal(e.to_string()));
        Ok(Response::new(Box::pin(out)))
    }

    /// Measurements inserted into a collection of this shard: Arrow batches, or BSON
    /// documents (`format: "bson"`, each message's body a run of documents).
    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        let mut input = request.into_inner();
        let Some(first) = input.message().await? else {
            return Err(Status::invalid_argument("a put of no message"));
        };
        let descriptor = first
            .flight_descriptor
            .as_ref()
            .ok_or_else(|| Status::invalid_argument("a put without a descriptor"))?;
        let msg = protocol::read(&descriptor.cmd).map_err(bad_request)?;
        self.check(Address::read(&msg).map_err(bad_request)?, false)?;
        let name = msg.get_str("collection").map_err(bad_request)?.to_owned();
        let options = InsertOptions {
            ordered: msg.get_bool("ordered").unwrap_or(true),
            durability: protocol::durability_of(msg.get_str("durability").unwrap_or("buffered"))
                .map_err(bad_request)?,
        };
        let coll = self
            .db
            .collection(&name)
            .map_err(|e| Status::not_found(e.to_string()))?;
        let documents = msg.get_str("format").ok() == Some(protocol::FORMAT_BSON);
        let messages = futures::stream::once(async move { Ok(first) }).chain(input);
        let mut results = Vec::new();
        let mut offset = 0usize;
        let mut parts: Pin<Box<dyn Stream<Item = Result<Part, Status>> + Send>> = if documents {
            Box::pin(messages.map(|m| {
                let m = m?;
                protocol::read_documents(&m.data_body)
                    .map(Part::Documents)
                    .map_err(Status::invalid_argument)
            }))
        } else {
            let batches = arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(
                messages.map_err(|e| FlightError::Tonic(Box::new(e))),
            );
            Box::pin(batches.map(|b| {
                b.map(Part::Batch)
                    .map_err(|e| Status::invalid_argument(e.to_string()))
            }))
        };
        while let Some(part) = parts.next().await {
            let part = part?;
            let rows = part.rows();
            if rows == 0 {
                continue;
            }
            let coll = coll.clone();
            let result = tokio::task::spawn_blocking(move || {
                match part {
                    Part::Batch(b) => {
                        coll.insert_record_batch_with(&b, &options, &RecordBatchOptions::default())
                    }
                    Part::Documents(d) => coll.insert_many(&d, &options),
                }
                .or_else(tscoll_engine::Error::into_insert_result)
            })
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let errors: Vec<Bson> = result
                .errors
                .iter()
                .map(|w| {
                    Bson::Document(doc! {
                        "index": protocol::int(offset + w.index),
                        "code": w.code.code(),
                        "message": &w.message,
                    })
                })
                .collect();
            let stop = options.ordered && !errors.is_empty();
            results.push(Ok(PutResult {
                app_metadata: protocol::bytes(&doc! {
                    "inserted": protocol::int(result.inserted),
                    "errors": errors,
                })
                .into(),
            }));
            offset += rows;
            if stop {
                break;
            }
        }
        Ok(Response::new(Box::pin(futures::stream::iter(results))))
    }

    async fn do_exchange(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        Err(Status::unimplemented("do_exchange"))
    }

    /// `command` and `describe` (`protocol.rs`).
    async fn do_action(
        &self,
        request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        let action = request.into_inner();
        let msg = protocol::read(&action.body).map_err(bad_request)?;
        let this = self.clone();
        let kind = action.r#type.clone();
        let reply = tokio::task::spawn_blocking(move || match kind.as_str() {
            protocol::COMMAND => this.command(&msg),
            protocol::DESCRIBE => this.describe(&msg),
            other => Err(Status::unimplemented(format!("the action '{other}'"))),
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
        let result = arrow_flight::Result {
            body: protocol::bytes(&reply).into(),
        };
        Ok(Response::new(Box::pin(futures::stream::once(async {
            Ok(result)
        }))))
    }

    async fn list_actions(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        let actions = [
            (protocol::COMMAND, "a MongoDB command on the shard"),
            (protocol::DESCRIBE, "the shard's collections and schemas"),
        ]
        .map(|(t, d)| {
            Ok(ActionType {
                r#type: t.to_owned(),
                description: d.to_owned(),
            })
        });
        Ok(Response::new(Box::pin(futures::stream::iter(actions))))
    }
}
