"use strict";
// The page is built in the web-ui branch; this placeholder keeps the server testable.
