//! A TCP proxy on 127.0.0.1 between the recorder and the real API server,
//! that can cut every connection and hold new ones until released: how a test
//! drops the recorder's watches (a network blip) without touching the server,
//! or stalls them: stops forwarding without closing, as a NAT or proxy that
//! forgot a connection does.
//! TLS passes through untouched; the server's certificate names 127.0.0.1.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a held connection waits for release before it is dropped.
const HOLD_LIMIT: Duration = Duration::from_secs(120);

#[derive(Default)]
struct State {
    open: bool,
    /// Both ends of every connection being forwarded.
    live: Vec<TcpStream>,
    accepted: u64,
    /// Connections accepted while held, waiting for release.
    waiting: u64,
    /// Connections numbered up to this one forward nothing more, and stay
    /// open (bounded by [`HOLD_LIMIT`]).
    stalled_upto: u64,
}

pub struct Proxy {
    pub addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy binds");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new((
            Mutex::new(State {
                open: true,
                ..State::default()
            }),
            Condvar::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || forward(conn, upstream, &st));
            }
        });
        Proxy { addr, state, stop }
    }

    /// The proxy's URL for an https client.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Cuts every connection and holds new ones until [`Proxy::release`].
    pub fn cut_and_hold(&self) {
        let (lock, _) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.open = false;
        for c in s.live.drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    pub fn release(&self) {
        let (lock, cv) = &*self.state;
        lock.lock().unwrap().open = true;
        cv.notify_all();
    }

    /// Stops forwarding on every connection open now, without closing any;
    /// new connections are forwarded.
    pub fn stall(&self) {
        let (lock, _) = &*self.state;
        let mut s = lock.lock().unwrap();
        s.stalled_upto = s.accepted;
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.state.0.lock().unwrap().accepted
    }

    /// Connections held, waiting for release.
    pub fn waiting(&self) -> u64 {
        self.state.0.lock().unwrap().waiting
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release();
        self.cut_and_hold();
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn forward(client: TcpStream, upstream: SocketAddr, state: &(Mutex<State>, Condvar)) {
    let (lock, cv) = state;
    let id = {
        let mut s = lock.lock().unwrap();
        s.accepted += 1;
        let id = s.accepted;
        let started = Instant::now();
        if !s.open {
            s.waiting += 1;
            while !s.open && started.elapsed() < HOLD_LIMIT {
                s = cv.wait_timeout(s, Duration::from_millis(200)).unwrap().0;
            }
            s.waiting -= 1;
            if !s.open {
                return;
            }
        }
        id
    };
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    {
        let mut s = lock.lock().unwrap();
        for c in [&client, &server] {
            if let Ok(c) = c.try_clone() {
                s.live.push(c);
            }
        }
    }
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::scope(|scope| {
        scope.spawn(|| pipe(c2, s2, id, state));
        pipe(server, client, id, state);
    });
}

/// Copies until either side closes, then closes both. A stalled connection
/// holds what it read, forwards nothing and stays open, until the proxy is
/// dropped or [`HOLD_LIMIT`] passes.
fn pipe(mut from: TcpStream, mut to: TcpStream, id: u64, state: &(Mutex<State>, Condvar)) {
    let (lock, cv) = state;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut s = lock.lock().unwrap();
                if id <= s.stalled_upto {
                    let started = Instant::now();
                    while id <= s.stalled_upto && s.open && started.elapsed() < HOLD_LIMIT {
                        s = cv.wait_timeout(s, Duration::from_millis(200)).unwrap().0;
                    }
                    break;
                }
                drop(s);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
