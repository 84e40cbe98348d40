/**
 * A TCP proxy of the chaos run's own, in front of a dependency (the DynamoDB endpoint): the
 * run's runtime connects through it, and cutting it is an outage that keeps the data. Cut,
 * every open connection is reset and new ones are refused, as when a network path or an
 * endpoint goes away; restored, it listens again on the same port.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** Forwards connections on a local port to `target`; can be cut and restored. */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private listeningPort = 0;

  private constructor(private readonly target: { readonly host: string; readonly port: number }) {}

  /** Starts a proxy on a free port of 127.0.0.1 in front of `target` (`http://host:port`). */
  static async start(target: string): Promise<TcpProxy> {
    const url = new URL(target);
    const proxy = new TcpProxy({ host: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) });
    await proxy.listen(0);
    return proxy;
  }

  /** The endpoint to give clients instead of the target. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.listeningPort}`;
  }

  /** True while connections are refused. */
  get isCut(): boolean {
    return this.server === undefined;
  }

  private listen(port: number): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        // A reset on one side ends the other; the client sees a failed request and retries.
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        const address = server.address();
        this.listeningPort = typeof address === 'object' && address !== null ? address.port : port;
        this.server = server;
        resolve();
      });
    });
  }

  /** Resets every open connection and refuses new ones until `restore`. */
  async cut(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
    await closed;
  }

  /** Accepts connections again, on the same port. */
  async restore(): Promise<void> {
    if (this.server !== undefined) return;
    await this.listen(this.listeningPort);
  }

  /** Stops the proxy for good. */
  async close(): Promise<void> {
    await this.cut();
  }
}
