export declare const TEST_ACCOUNT: RegExp;
export interface TestAccounts {
  users: string[];
  groups: string[];
}
export declare function testAccounts(): TestAccounts;
export declare function removeTestAccounts(before: TestAccounts): { removed: string[]; failed: string[] };
