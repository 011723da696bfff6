// Boost.JSON, header-only: its sources are compiled here, once (Debian ships no libboost_json
// in libboost1.81-dev's default set, and the tool needs nothing else from it).
#include <boost/json/src.hpp>
