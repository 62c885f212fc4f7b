//! A TCP proxy on 127.0.0.1 between the recorder and the real API server,
//! that can cut every connection and hold new ones until released: how a test
//! drops the recorder's watches (a network blip) without touching the server.
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
    {
        let mut s = lock.lock().unwrap();
        s.accepted += 1;
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
    }
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
    let up = std::thread::spawn(move || pipe(c2, s2));
    pipe(server, client);
    let _ = up.join();
}

/// Copies until either side closes, then closes both.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
