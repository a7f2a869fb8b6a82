//! The select workload's channel pairs: two bounded channels behind one Tx
//! and one Rx, each operation a select over both ("select on both sides",
//! the shape of crossbeam-channel's own benchmarks). Sending selects a send
//! of the same message on either; receiving selects a receive from either
//! and says which (Rx::recv_which), so order is checked per channel.
//! crossbeam's `select!` picks fairly among the ready cases.
//!
//! flume's `Selector` is not here: built the same way (flume 0.10.14), its
//! 1x1 run received 200084 messages of 200000 sent, which the checks stop.

use crate::run::{Rx, Tx};

#[derive(Clone)]
pub struct CbPair<C>(pub C, pub C);

impl<M: Send + Copy> Tx<M> for CbPair<crossbeam_channel::Sender<M>> {
    fn try_send(&self, m: M) -> bool {
        crossbeam_channel::select! {
            send(self.0, m) -> r => { r.expect("disconnected"); true },
            send(self.1, m) -> r => { r.expect("disconnected"); true },
            default => false,
        }
    }
    fn send(&self, m: M) {
        crossbeam_channel::select! {
            send(self.0, m) -> r => r.expect("disconnected"),
            send(self.1, m) -> r => r.expect("disconnected"),
        }
    }
}

impl<M: Send> Rx<M> for CbPair<crossbeam_channel::Receiver<M>> {
    fn try_recv(&self) -> Option<M> {
        self.try_recv_which().map(|(_, m)| m)
    }
    fn recv(&self) -> M {
        self.recv_which().1
    }
    fn recv_which(&self) -> (usize, M) {
        crossbeam_channel::select! {
            recv(self.0) -> m => (0, m.expect("disconnected")),
            recv(self.1) -> m => (1, m.expect("disconnected")),
        }
    }
    fn try_recv_which(&self) -> Option<(usize, M)> {
        crossbeam_channel::select! {
            recv(self.0) -> m => Some((0, m.expect("disconnected"))),
            recv(self.1) -> m => Some((1, m.expect("disconnected"))),
            default => None,
        }
    }
}
