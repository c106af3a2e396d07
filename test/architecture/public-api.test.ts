/**
 * The public surface is deliberate: the names the package root exports, and what kind each is
 * (class, function, constant, interface, type), are listed here. Adding, removing or changing the kind
 * of an export fails this test until the list is updated with it, in the same change.
 */
import * as path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ENTRY = path.resolve(import.meta.dirname, '../../src/index.ts');

/** `name: kind` for every export of the package root, sorted. */
function publicSurface(): string[] {
  const program = ts.createProgram([ENTRY], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
  });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(ENTRY)!)!;
  return checker
    .getExportsOfModule(module)
    .map((exported) => {
      const symbol =
        exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const f = symbol.flags;
      const kind =
        f & ts.SymbolFlags.Class
          ? 'class'
          : f & ts.SymbolFlags.Function
            ? 'function'
            : f & ts.SymbolFlags.Variable
              ? 'const'
              : f & ts.SymbolFlags.Interface
                ? 'interface'
                : f & ts.SymbolFlags.TypeAlias
                  ? 'type'
                  : 'other';
      return `${exported.name}: ${kind}`;
    })
    .sort();
}

describe('the public API', () => {
  it('exports exactly these names, each of this kind', () => {
    expect(publicSurface()).toEqual([
      'AclBinding: interface',
      'Assignor: interface',
      'AssignorInput: interface',
      'AssignorMember: interface',
      'AssignorName: type',
      'BackupReport: interface',
      'BoundListener: interface',
      'BucketCompactedListener: type',
      'BucketCompaction: interface',
      'BucketRecoveryReport: interface',
      'BucketRef: interface',
      'BucketStats: interface',
      'BucketStatus: interface',
      'BucketView: interface',
      'CheckpointInfo: interface',
      'CheckpointView: interface',
      'ClassicGroupDescription: interface',
      'ClassicGroupState: type',
      'ClassicGroups: class',
      'ClassicHeartbeatRequest: interface',
      'ClassicJoinGroupRequest: interface',
      'ClassicJoinGroupResult: type',
      'ClassicJoinMember: interface',
      'ClassicJoinedGroup: interface',
      'ClassicLeaveGroupRequest: interface',
      'ClassicLeaveGroupResult: interface',
      'ClassicMemberDescription: interface',
      'ClassicMemberIdRequired: interface',
      'ClassicProtocolInput: interface',
      'ClassicSyncGroupRequest: interface',
      'ClassicSyncGroupResult: interface',
      'Clock: interface',
      'ClusterServer: interface',
      'ClusterServerOptions: interface',
      'ClusterStatus: interface',
      'ClusterTopicStatus: interface',
      'CommitOptions: interface',
      'CommittedOffset: type',
      'CompactOptions: interface',
      'CompactionOptions: interface',
      'CompactionPlan: interface',
      'CompactionReport: interface',
      'CompactionRunEvent: type',
      'CompactionRunListener: type',
      'CompactionStrategy: type',
      'CompactionStrategyDefinition: interface',
      'ConnectionStats: interface',
      'DeleteOffsetsOptions: interface',
      'Durability: type',
      'ERROR_CODES: const',
      'ErrorCode: type',
      'FetchOptions: interface',
      'FileHandle: interface',
      'FileSystem: interface',
      'GarbageQuery: interface',
      'GroupDescription: interface',
      'GroupListing: interface',
      'GroupMember: class',
      'GroupMemberPort: interface',
      'GroupOptions: interface',
      'GroupState: type',
      'GroupType: type',
      'HeartbeatRequest: interface',
      'HeartbeatResponse: interface',
      'JsonValue: type',
      'KafkaServer: class',
      'KafkaServerCloseOptions: interface',
      'KafkaServerOptions: interface',
      'KafkaServerStats: interface',
      'ListenerOptions: interface',
      'ListenerTlsOptions: interface',
      'LogInspector: interface',
      'ManualClock: class',
      'MemberCommitOffset: interface',
      'MemberDescription: interface',
      'MemberOptions: interface',
      'MemberState: type',
      'MissingOffsetPolicy: type',
      'NodeFileSystem: class',
      'NodeFileSystemOptions: interface',
      'NodeInfo: interface',
      'OffsetCommit: interface',
      'OffsetStore: class',
      'OffsetStoreError: class',
      'OffsetStoreOptions: interface',
      'OpenFlags: type',
      'RangeAssignor: class',
      'RemoveMembersRequest: interface',
      'RemovedMember: interface',
      'SaslMechanism: type',
      'ScannerOffsets: class',
      'ScannerOptions: interface',
      'SecurityOptions: interface',
      'SecurityProtocol: type',
      'SecurityStats: interface',
      'SegmentGarbage: interface',
      'SegmentView: interface',
      'StoreStats: interface',
      'StrategySettings: interface',
      'SystemClock: class',
      'TableBucket: interface',
      'TableLayout: interface',
      'TableLayoutInput: interface',
      'Timer: interface',
      'TopicSpec: interface',
      'UniformAssignor: class',
      'isOffsetStoreError: function',
      'startClusterServer: function',
      'startKafkaServer: function',
    ]);
  });
});
