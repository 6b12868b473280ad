// This client's name and version, as package.json has them (a test keeps the two equal): error
// messages name them.
export const CLIENT_NAME = "pg-bloomfilter";
export const CLIENT_VERSION = "1.1.0";
