/**
 * TCP keepalive for every connection to PostgreSQL. pg turns it on with an initial delay of 0,
 * which keeps the system's own (two hours on Linux): a peer gone without a word (a host that
 * died, a NAT entry dropped) would hold a connection for as long. With probes after ten idle
 * seconds the kernel gives such a connection up within minutes (its probe interval and count
 * stay the system's). A path that drops data but answers probes is not caught this way: the
 * commit feed's heartbeat is (listen-heartbeat.ts).
 */
export const TCP_KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;
