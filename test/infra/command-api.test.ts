/**
 * The command API on AWS, as `cdk synth` builds it: an HTTP API whose routes are the API's,
 * each behind IAM authorization, throttled and logged, with no CORS unless origins are named;
 * its function in the VPC, writing only to the commands topic and reading only items of the
 * two tables.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../functions/command-api/routes.ts';
import { functions } from '../../functions/topology.ts';
import { actionsOf, resourcesOf, statementsOfFunction, synthesize, type Synthesized } from './synth.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize({ skipBundling: true });
}, 120_000);

const apiFunctionId = (s: Synthesized): string => {
  const fn = s.stack.handlers.functions.commandApi;
  if (fn === undefined) throw new Error('no commandApi function');
  return s.stack.getLogicalId(fn.node.defaultChild as never);
};

describe('command API front door', () => {
  it("is one HTTP API with exactly the API's routes, every one behind IAM authorization", () => {
    synth.template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    synth.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const created = Object.values(resourcesOf(synth.template, 'AWS::ApiGatewayV2::Route'));
    expect(created.map((r) => r.Properties?.RouteKey).sort()).toStrictEqual(
      Object.values(routes)
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    );
    for (const route of created) expect(route.Properties?.AuthorizationType).toBe('AWS_IAM');
  });

  it('hands every request to the command API function in payload format 2.0', () => {
    const integrations = Object.values(resourcesOf(synth.template, 'AWS::ApiGatewayV2::Integration'));
    expect(integrations).toHaveLength(1);
    expect(integrations[0]?.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    expect(JSON.stringify(integrations[0]?.Properties?.IntegrationUri)).toContain(apiFunctionId(synth));
  });

  it("throttles the stage at the topology's rate and burst, and logs each request as JSON", () => {
    synth.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: functions.commandApi.http.rateLimit,
        ThrottlingBurstLimit: functions.commandApi.http.burstLimit,
      },
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
    });
    const [stage] = Object.values(resourcesOf(synth.template, 'AWS::ApiGatewayV2::Stage'));
    const format = JSON.parse((stage?.Properties?.AccessLogSettings as { Format: string }).Format) as Record<string, string>;
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status', caller: '$context.identity.caller' });
  });

  it('has no CORS unless origins are named, and refuses a wildcard origin', () => {
    const corsOf = (s: Synthesized) =>
      Object.values(resourcesOf(s.template, 'AWS::ApiGatewayV2::Api'))[0]?.Properties?.CorsConfiguration as
        Record<string, string[]> | undefined;
    expect(corsOf(synth)).toBeUndefined();
    const cors = corsOf(
      synthesize({ skipBundling: true, context: { commandApiCorsOrigins: 'https://app.example.com, http://localhost:5173' } }),
    );
    expect(cors?.AllowOrigins).toStrictEqual(['https://app.example.com', 'http://localhost:5173']);
    expect([...(cors?.AllowMethods ?? [])].sort()).toStrictEqual(['GET', 'POST']);
    expect(cors?.AllowHeaders).toContain('authorization');
    expect(() => synthesize({ skipBundling: true, context: { commandApiCorsOrigins: '*' } })).toThrow(
      /commandApiCorsOrigins: expected origins/,
    );
  });

  it("puts the function in the VPC, with a timeout below API Gateway's 30 s", () => {
    const fn = resourcesOf(synth.template, 'AWS::Lambda::Function')[apiFunctionId(synth)];
    expect(fn?.Properties?.VpcConfig).toMatchObject({
      SubnetIds: expect.any(Array) as unknown,
      SecurityGroupIds: expect.any(Array) as unknown,
    });
    expect(fn?.Properties?.Timeout).toBeLessThan(30);
  });

  it('lets the function produce to the commands topic only, read items of the tables by key, and put items of the aggregates table (its commandIds), nothing more', () => {
    const statements = statementsOfFunction(synth.template, apiFunctionId(synth));
    const actions = statements.flatMap(actionsOf);
    const writes = statements.filter((s) => actionsOf(s).includes('kafka-cluster:WriteData'));
    const names = synth.stack.topics.names;
    expect(JSON.stringify(writes.map((s) => s.Resource))).toContain(`/${names.commands}"`);
    for (const other of [names.events, names.results, names.deadLetter])
      expect(JSON.stringify(writes.map((s) => s.Resource))).not.toContain(`/${other}"`);
    expect(actions).not.toContain('kafka-cluster:ReadData');
    const dynamo = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    const on = (table: string) =>
      [...new Set(dynamo.filter((s) => JSON.stringify(s.Resource).includes(table)).flatMap(actionsOf))]
        .filter((a) => a.startsWith('dynamodb:'))
        .sort();
    // A conditional put of what each commandId carried (a reused commandId is refused): nothing of the read models.
    expect(on('TablesAggregates')).toStrictEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem']);
    expect(on('TablesReadModels')).toStrictEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem']);
    expect(actions.filter((a) => a.startsWith('lambda:') || a.startsWith('execute-api:'))).toStrictEqual([]);
  });

  it('lets API Gateway invoke the function, and says where the API is', () => {
    const permissions = Object.values(resourcesOf(synth.template, 'AWS::Lambda::Permission')).filter((p) =>
      JSON.stringify(p.Properties?.FunctionName).includes(apiFunctionId(synth)),
    );
    expect(permissions.length).toBeGreaterThan(0);
    for (const p of permissions)
      expect(p.Properties).toMatchObject({ Action: 'lambda:InvokeFunction', Principal: 'apigateway.amazonaws.com' });
    synth.template.hasOutput('CommandApiUrl', {});
  });
});

describe('aggregates table', () => {
  it('expires archived commandIds and kept outcomes by DynamoDB TTL on expiresAt', () => {
    synth.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
    });
  });
});
