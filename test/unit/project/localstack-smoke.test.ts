/**
 * The LocalStack smoke test (`npm run smoke:localstack`) where LocalStack is not: it stops at
 * the health check with exit code 2, says what to start, and deploys nothing. LocalStack
 * itself cannot run here (it needs Docker and a paid auth token for MSK), so the endpoints are
 * a closed port and small HTTP servers that answer as LocalStack's health endpoint would.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../../infra/bundling.ts';
import { runToEnd, type Finished } from '../../support/process.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** An HTTP server on a free port that answers every request with `status` and `body`. */
const answering = async (status: number, body: unknown): Promise<string> => {
  const server = createServer((_request, response) =>
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** A port nothing listens on. */
const closedPort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
};

const smoke = (...args: string[]): Promise<Finished> =>
  runToEnd(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'local', 'localstack-smoke.ts'), ...args], { cwd: PROJECT_ROOT });

const allServices = Object.fromEntries(
  ['cloudformation', 'dynamodb', 'ec2', 'iam', 'kafka', 'lambda', 'logs', 's3', 'ssm', 'sts'].map((s) => [s, 'available']),
);

describe('LocalStack smoke test without LocalStack', () => {
  it('stops with what to start when nothing answers at the endpoint, and deploys nothing', async () => {
    const port = await closedPort();
    const { code, stdout, stderr } = await smoke('--endpoint', `http://127.0.0.1:${port}`);
    expect(stderr).toContain(`LocalStack is not answering at http://127.0.0.1:${port}/_localstack/health (connect ECONNREFUSED`);
    expect(stderr).toContain('LOCALSTACK_AUTH_TOKEN whose plan includes MSK and its Lambda triggers (paid features)');
    expect(stderr).toContain('Nothing was deployed.');
    expect(stdout).not.toContain('Deploying');
    expect(code).toBe(2);
  }, 30_000);

  it('names MSK as what is missing when LocalStack runs without it', async () => {
    const endpoint = await answering(200, { services: { ...allServices, kafka: 'disabled' }, edition: 'community', version: '4.12.0' });
    const { code, stdout, stderr } = await smoke('--endpoint', endpoint);
    expect(stderr).toContain(`LocalStack 4.12.0 (community) at ${endpoint} lacks what the stack needs: kafka (MSK): disabled.`);
    expect(stderr).toContain('Nothing was deployed.');
    expect(stdout).not.toContain('Deploying');
    expect(code).toBe(2);
  }, 30_000);

  it('lists every service the stack needs that LocalStack does not run', async () => {
    const services: Record<string, string> = { ...allServices, kafka: 'error' };
    delete services.lambda;
    const endpoint = await answering(200, { services });
    const { code, stderr } = await smoke('--endpoint', endpoint);
    expect(stderr).toContain('lacks what the stack needs: kafka (MSK): error, lambda: absent.');
    expect(code).toBe(2);
  }, 30_000);

  it('refuses an endpoint that answers but is not LocalStack', async () => {
    const endpoint = await answering(404, { message: 'not found' });
    const { code, stderr } = await smoke('--endpoint', endpoint);
    expect(stderr).toContain(`${endpoint} answers, but not as LocalStack (HTTP 404 from ${endpoint}/_localstack/health)`);
    expect(code).toBe(2);
  }, 30_000);

  it('refuses a timeout that is not a whole number before contacting anything', async () => {
    const { code, stderr } = await smoke('--timeout', 'soon');
    expect(stderr).toContain('--timeout must be a whole number of milliseconds, got soon');
    expect(code).toBe(2);
  }, 30_000);
});
