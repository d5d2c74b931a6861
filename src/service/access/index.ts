export * from './access-lists.js';
export * from './config-path.js';
export * from './list-file.js';
export {
  type GroupEntry,
  groupById,
  groupByName,
  groupNamesOf,
  type PasswdEntry,
  userById,
  userByName,
} from './nss.js';
