/**
 * The local Kafka broker: Apache Kafka from Maven Central jars (no tarball, no Docker),
 * single-node KRaft on 127.0.0.1:9092, data and logs under `.cache/`.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { logLevel } from 'kafkajs';
import { createKafka, createProducer } from '../../functions/compose/operator.ts';
import { kafkaBrokers, LOCAL_KAFKA_BROKERS } from '../../functions/config.ts';
import type { Component } from './component.ts';
import { MissingToolError, StackError, StartTimeoutError } from './errors.ts';
import { cacheDir, logFile, projectRoot } from './paths.ts';
import {
  capture,
  isOurs,
  logTail,
  portOpen,
  readPidFile,
  run,
  startDetached,
  stopRecorded,
  waitUntil,
  type Detached,
} from './processes.ts';

const configDir = join(projectRoot, 'local', 'kafka');
const pom = join(configDir, 'pom.xml');
const pomText = (): string => readFileSync(pom, 'utf8');

/** The Kafka version the pom pins (its `kafka.version` property): the one source of it. */
export const kafkaVersion = (): string => {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pomText());
  if (match?.[1] === undefined) throw new StackError(`${pom} has no <kafka.version> property`);
  return match[1];
};

const kafkaDir = join(cacheDir, 'kafka');
const libsDir = (): string => join(kafkaDir, kafkaVersion(), 'libs');
/** Written after a complete copy, holding the pom's hash: a changed pom installs again. */
const installedMarker = (): string => join(kafkaDir, kafkaVersion(), 'installed.sha256');
const dataDir = join(kafkaDir, 'data');
const serverProperties = join(kafkaDir, 'server.properties');
const log4jConfig = join(configDir, 'log4j2.properties');
const log = logFile('kafka');
/** Maven's output when it fetches the jars: shown only when that fails. */
const installLog = logFile('kafka-install');
const port = Number(LOCAL_KAFKA_BROKERS.split(':')[1]);
/** What the broker's command line holds, so `stop` never kills another process that reuses the pid. */
const markers = ['kafka.Kafka', serverProperties];

/**
 * C1 only: the broker is up in about 5 s instead of 9 on a 2-core machine, and the peak
 * throughput it gives up does not matter for local runs and tests.
 */
const jvmStartup = ['-XX:TieredStopAtLevel=1'];
const java = (): string => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java');
const classpath = (): string => `${libsDir()}/*`;
const hint = 'Or point KAFKA_BROKERS at a Kafka broker you run yourself (e.g. KAFKA_BROKERS=host:9092); the stack then starts none.';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const installed = (): boolean => existsSync(installedMarker()) && readFileSync(installedMarker(), 'utf8').trim() === sha256(pomText());

/** Java 17 or newer is on the PATH (or in JAVA_HOME). */
const checkJava = async (): Promise<void> => {
  const out = await capture(java(), ['-version']);
  if (out === undefined)
    throw new MissingToolError(
      'java',
      `The local Kafka broker needs Java 17 or newer, and \`${java()}\` was not found. Install a JDK 17+ (e.g. apt-get install openjdk-17-jre-headless). ${hint}`,
    );
  const match = /version "(\d+)(?:\.(\d+))?/.exec(out.stderr + out.stdout);
  const major = match?.[1] === '1' ? Number(match[2]) : Number(match?.[1]);
  if (!(major >= 17))
    throw new MissingToolError(
      'java',
      `The local Kafka broker needs Java 17 or newer; \`${java()} -version\` says:\n${out.stderr.trim()}\n${hint}`,
    );
};

/** Maven is needed only to fetch the jars, the first time. */
const checkMaven = async (): Promise<void> => {
  if (installed()) return;
  const out = await capture('mvn', ['-v']);
  if (out?.code !== 0)
    throw new MissingToolError(
      'mvn',
      `The local Kafka broker is fetched from Maven Central with Maven, and \`mvn\` was not found. Install Maven 3 (e.g. apt-get install maven). ${hint}`,
    );
};

/** Copies the broker's jars into `.cache/kafka/<version>/libs`, once. */
const install = async (): Promise<void> => {
  if (installed()) return;
  const version = kafkaVersion();
  const libs = libsDir();
  const partial = `${libs}.partial`; // one installer at a time: startStack holds a lock
  rmSync(partial, { recursive: true, force: true });
  rmSync(libs, { recursive: true, force: true });
  rmSync(installLog, { force: true });
  console.log(`[kafka] Fetching Apache Kafka ${version} from Maven Central into ${libs} (first run only; log: ${installLog})`);
  await run('mvn', ['-B', '-Dstyle.color=never', '-f', pom, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`], installLog);
  renameSync(partial, libs);
  writeFileSync(installedMarker(), sha256(pomText()) + '\n');
};

/** Writes server.properties and formats the storage the first time (KRaft needs a cluster id). */
const prepare = async (): Promise<void> => {
  mkdirSync(dataDir, { recursive: true });
  const template = readFileSync(join(configDir, 'server.properties'), 'utf8');
  writeFileSync(serverProperties, template.replaceAll('@DATA_DIR@', dataDir));
  if (existsSync(join(dataDir, 'meta.properties'))) return;
  const tool = (args: string[]) => [
    ...jvmStartup,
    '-Xmx256m',
    `-Dlog4j2.configurationFile=${log4jConfig}`,
    '-cp',
    classpath(),
    'kafka.tools.StorageTool',
    ...args,
  ];
  const uuid = await capture(java(), tool(['random-uuid']));
  const clusterId = uuid?.stdout.trim().split('\n').pop()?.trim() ?? '';
  if (uuid?.code !== 0 || !/^[\w-]{22}$/.test(clusterId))
    throw new StackError(`kafka.tools.StorageTool random-uuid failed:\n${uuid?.stderr ?? ''}${uuid?.stdout ?? ''}`);
  // The tool prints the whole broker config at INFO: show it only when formatting fails.
  const format = await capture(java(), tool(['format', '--standalone', '-t', clusterId, '-c', serverProperties, '-g']));
  if (format?.code !== 0) throw new StackError(`kafka.tools.StorageTool format failed:\n${format?.stderr ?? ''}${format?.stdout ?? ''}`);
  console.log(`[kafka] Formatted ${dataDir} (cluster id ${clusterId})`);
};

/** The broker answers a metadata request. */
const brokerAnswers = async (brokers: string[], timeoutMs: number): Promise<boolean> => {
  const admin = createKafka('kafka-aggregates-stack', brokers).admin();
  const attempt = (async () => {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  })();
  const timer = new AbortController();
  const timeout = sleep(timeoutMs, false, { signal: timer.signal }).catch(() => false);
  try {
    return await Promise.race([attempt.catch(() => false), timeout]);
  } finally {
    // A pending timer would keep the caller's process (the CLI, vitest) alive.
    timer.abort();
    attempt.catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
};

const running = async (): Promise<boolean> => {
  const record = readPidFile('kafka');
  return record !== undefined && (await isOurs(record.pid, markers));
};

const waitReady = async (): Promise<void> => {
  const ready = await waitUntil(
    async () => (await portOpen(port)) && (await brokerAnswers([LOCAL_KAFKA_BROKERS], 10_000)),
    90_000,
    running,
  );
  if (!ready) {
    const why = (await running()) ? 'did not answer metadata requests within 90 s' : 'exited while starting';
    throw new StartTimeoutError('kafka', log, `The local Kafka broker ${why}. Its log is ${log}; last lines:\n${logTail(log)}`);
  }
};

/**
 * A fresh broker answers metadata seconds before its group and transaction coordinators have
 * loaded their internal topics; until then every client's first join or idempotent producer
 * logs retriable errors. Waiting for both here keeps that noise out of the tests.
 */
/** How long a started broker may take to load its group coordinator. */
const coordinatorTimeoutMs = 180_000;

const warmUp = async (): Promise<void> => {
  const client = createKafka('kafka-aggregates-stack-warmup', [LOCAL_KAFKA_BROKERS]);
  client.logger().setLogLevel(logLevel.NOTHING);
  const admin = client.admin();
  const producer = createProducer(client);
  try {
    await admin.connect();
    // The group coordinator loads every partition of its internal topic first: on a data
    // directory that kept the topics of many earlier runs that takes longer than one call's retries.
    const loaded = await waitUntil(
      () =>
        admin.describeGroups(['kafka-aggregates-stack-warmup']).then(
          () => true,
          () => false,
        ),
      coordinatorTimeoutMs,
      running,
    );
    if (!loaded)
      throw new StartTimeoutError(
        'kafka',
        log,
        `The local Kafka broker did not load its group coordinator within ${coordinatorTimeoutMs / 1000} s. ` +
          `If ${dataDir} holds the topics of many earlier runs, stop the stack and delete it. Its log is ${log}; last lines:\n${logTail(log)}`,
      );
    await producer.connect();
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
};

const launch = async (): Promise<Detached> => {
  await prepare();
  const started = startDetached(
    'kafka',
    java(),
    [
      ...jvmStartup,
      '-Xms256m',
      '-Xmx512m',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${log4jConfig}`,
      '-cp',
      classpath(),
      'kafka.Kafka',
      serverProperties,
    ],
    projectRoot,
  );
  await waitReady();
  await warmUp();
  return started;
};

/** Deletes every topic but Kafka's internal ones, and waits until they are gone. */
const deleteTopics = async (): Promise<void> => {
  const admin = createKafka('kafka-aggregates-stack-reset', [LOCAL_KAFKA_BROKERS]).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
    if (topics.length === 0) return;
    await admin.deleteTopics({ topics, timeout: 30_000 });
    const gone = await waitUntil(async () => !(await admin.listTopics()).some((t) => topics.includes(t)), 30_000);
    if (!gone) throw new StackError(`Kafka still lists deleted topics after 30 s: ${topics.join(', ')}`);
  } finally {
    await admin.disconnect();
  }
};

/** The local Kafka broker as a stack component. */
export const kafka: Component = {
  name: 'kafka',
  get title() {
    return `Kafka ${kafkaVersion()} broker`;
  },
  endpoint: LOCAL_KAFKA_BROKERS,
  external: () => kafkaBrokers().join(',') !== LOCAL_KAFKA_BROKERS,
  answers: async () => (await portOpen(port)) && (await brokerAnswers([LOCAL_KAFKA_BROKERS], 15_000)),
  checkTools: async () => {
    await checkJava();
    await checkMaven();
  },
  install,
  launch,
  running,
  waitReady,
  stop: () => stopRecorded('kafka', markers, 30_000),
  reset: deleteTopics,
};
