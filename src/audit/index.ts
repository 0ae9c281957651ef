export {
  evolveSessionLog,
  formatSessionLog,
  initialSessionLog,
  orderSessionEvents,
  sessionLogFrom,
} from './sessionLog.js';
export type {
  CallOutcome,
  FinalCall,
  SessionLog,
  SessionLogState,
  SessionUsage,
  TurnCounter,
  TurnUsage,
} from './sessionLog.js';
export { auditReport, evolveAudit, formatAuditReport, initialAuditState } from './report.js';
export type {
  AuditApproval,
  AuditBlocked,
  AuditCall,
  AuditCodeRun,
  AuditDescribe,
  AuditDetail,
  AuditHook,
  AuditReport,
  AuditSearch,
  AuditSourceFailure,
  AuditState,
  AuditTurn,
} from './report.js';
