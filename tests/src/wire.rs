//! A packet-level MQTT 5 client for session tests: one TCP connection, packets written and
//! read one at a time (rumqttc's codec, none of its state machine), so a test decides the
//! CONNECT flags, when to acknowledge, and when to cut — and reads `session_present`.
//!
//! ```no_run
//! # async fn demo(port: u16) -> anyhow::Result<()> {
//! use mqstate_tests::wire::Wire;
//! let (mut wire, ack) = Wire::connect(("127.0.0.1", port), "tester", false, 60).await?;
//! assert!(!ack.session_present);
//! wire.subscribe("a/b").await?;
//! wire.cut();
//! # Ok(()) }
//! ```

use std::time::Duration;

use anyhow::{Context, bail};
use bytes::{Bytes, BytesMut};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{
    ConnAck, Connect, ConnectProperties, Disconnect, DisconnectReasonCode, Filter, Packet, PubAck,
    Publish, PublishProperties, Subscribe,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, ToSocketAddrs};

/// How long a read waits before the test fails.
pub const WIRE_TIMEOUT: Duration = Duration::from_secs(10);

const MAX_PACKET: u32 = 64 * 1024 * 1024;

/// One MQTT 5 connection driven packet by packet.
pub struct Wire {
    stream: TcpStream,
    buffer: BytesMut,
    next_pkid: u16,
}

impl Wire {
    /// Connects as `client_id` with these CONNECT flags; returns the connection and its
    /// CONNACK (whatever its reason code: the caller checks it).
    pub async fn connect(
        addr: impl ToSocketAddrs,
        client_id: &str,
        clean_start: bool,
        session_expiry: u32,
    ) -> anyhow::Result<(Wire, ConnAck)> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut wire = Wire {
            stream,
            buffer: BytesMut::new(),
            next_pkid: 1,
        };
        let properties = ConnectProperties {
            session_expiry_interval: Some(session_expiry),
            max_packet_size: Some(MAX_PACKET),
            ..ConnectProperties::new()
        };
        let connect = Connect {
            keep_alive: 60,
            client_id: client_id.to_owned(),
            clean_start,
            properties: Some(properties),
        };
        wire.write(Packet::Connect(connect, None, None)).await?;
        match wire.read().await? {
            Packet::ConnAck(ack) => Ok((wire, ack)),
            other => bail!("expected CONNACK, got {other:?}"),
        }
    }

    fn pkid(&mut self) -> u16 {
        let id = self.next_pkid;
        self.next_pkid = self.next_pkid.checked_add(1).unwrap_or(1);
        id
    }

    /// Writes one packet.
    pub async fn write(&mut self, packet: Packet) -> anyhow::Result<()> {
        let mut out = BytesMut::new();
        packet
            .write(&mut out, Some(MAX_PACKET))
            .map_err(|e| anyhow::anyhow!("encoding {packet:?}: {e:?}"))?;
        self.stream.write_all(&out).await?;
        Ok(())
    }

    /// Reads the next packet (within [`WIRE_TIMEOUT`]).
    pub async fn read(&mut self) -> anyhow::Result<Packet> {
        self.read_within(WIRE_TIMEOUT)
            .await?
            .context("no packet arrived in time")
    }

    /// Reads the next packet, or `None` if none arrives within `wait`.
    pub async fn read_within(&mut self, wait: Duration) -> anyhow::Result<Option<Packet>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match Packet::read(&mut self.buffer, Some(MAX_PACKET)) {
                Ok(packet) => return Ok(Some(packet)),
                Err(rumqttc::v5::mqttbytes::Error::InsufficientBytes(_)) => {}
                Err(e) => bail!("malformed packet from the broker: {e:?}"),
            }
            let mut chunk = [0u8; 8192];
            let n = match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Ok(read) => read?,
                Err(_) => return Ok(None),
            };
            if n == 0 {
                bail!("the broker closed the connection");
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }

    /// Subscribes to `filter` at QoS 1 and waits for the SUBACK.
    pub async fn subscribe(&mut self, filter: &str) -> anyhow::Result<()> {
        let mut subscribe = Subscribe::new(Filter::new(filter, QoS::AtLeastOnce), None);
        subscribe.pkid = self.pkid();
        self.write(Packet::Subscribe(subscribe)).await?;
        loop {
            match self.read().await? {
                Packet::SubAck(_) => return Ok(()),
                Packet::Publish(p) => self.ack(&p).await?,
                other => bail!("expected SUBACK, got {other:?}"),
            }
        }
    }

    /// Publishes at QoS 1 with packet id `pkid` (or the next one) and does not wait for the
    /// PUBACK; returns the packet id.
    pub async fn publish(
        &mut self,
        topic: &str,
        payload: impl Into<Bytes>,
        properties: Option<PublishProperties>,
        resend: Option<u16>,
    ) -> anyhow::Result<u16> {
        let mut publish = Publish::new(topic, QoS::AtLeastOnce, payload.into(), properties);
        publish.pkid = match resend {
            Some(pkid) => {
                publish.dup = true;
                pkid
            }
            None => self.pkid(),
        };
        let pkid = publish.pkid;
        self.write(Packet::Publish(publish)).await?;
        Ok(pkid)
    }

    /// Acknowledges a QoS 1 PUBLISH.
    pub async fn ack(&mut self, publish: &Publish) -> anyhow::Result<()> {
        if publish.qos == QoS::AtLeastOnce {
            self.write(Packet::PubAck(PubAck::new(publish.pkid, None)))
                .await?;
        }
        Ok(())
    }

    /// The next PUBLISH, not acknowledged (PUBACKs read on the way are skipped).
    pub async fn next_publish(&mut self) -> anyhow::Result<Publish> {
        loop {
            match self.read().await? {
                Packet::Publish(p) => return Ok(p),
                Packet::PubAck(_) => {}
                other => bail!("expected PUBLISH, got {other:?}"),
            }
        }
    }

    /// Waits for the PUBACK of `pkid`, acknowledging PUBLISHes read on the way.
    pub async fn puback(&mut self, pkid: u16) -> anyhow::Result<()> {
        loop {
            match self.read().await? {
                Packet::PubAck(ack) if ack.pkid == pkid => return Ok(()),
                Packet::PubAck(_) => {}
                Packet::Publish(p) => self.ack(&p).await?,
                other => bail!("expected PUBACK {pkid}, got {other:?}"),
            }
        }
    }

    /// Sends DISCONNECT (normal) and closes.
    pub async fn disconnect(mut self) -> anyhow::Result<()> {
        self.write(Packet::Disconnect(Disconnect::new(
            DisconnectReasonCode::NormalDisconnection,
        )))
        .await?;
        self.stream.shutdown().await?;
        Ok(())
    }

    /// Drops the TCP connection without a DISCONNECT (an abrupt loss).
    pub fn cut(self) {
        drop(self);
    }
}
