#pragma once

#include "rlock/blocking.hpp"
#include "rlock/client.hpp"
#include "rlock/config.hpp"
#include "rlock/connection_state.hpp"
#include "rlock/error.hpp"
#include "rlock/fenced_lock.hpp"
#include "rlock/hold.hpp"
#include "rlock/lock_handle.hpp"
#include "rlock/reentrant_lock.hpp"
#include "rlock/version.hpp"
#include "rlock/with_lock.hpp"
