//! Serves the orders API on a loopback port, for running the example suite against an
//! external server: `cargo run -p orders-example --bin orders-server -- 127.0.0.1:8080`.

use std::io::Write;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let listener = tokio::net::TcpListener::bind(&address).await?;
    // The one line a script waits for, with the port the system picked.
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on http://{}", listener.local_addr()?)?;
    out.flush()?;
    drop(out);
    axum::serve(listener, orders_example::router()).await
}
