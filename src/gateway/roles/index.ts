/** Public face of the deployment roles (issue 5): which actors a process runs on the bus. */
export { startRoleServices, isRole, ROLES } from './startRoleServices.js';
export type { Role, RoleServices, RoleServicesOptions } from './startRoleServices.js';
export { openCommandBus } from './openCommandBus.js';
