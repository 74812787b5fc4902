package run

// CheckUsage exposes checkUsage to the external tests.
var CheckUsage = checkUsage
