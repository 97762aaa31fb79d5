// node-postgres and Sequelize against a server (what `tests/compat/node.rs` runs): connect
// (SET TIME ZONE INTERVAL, type lookups), sync with force and with alter (the catalog reads of
// describeTable / showIndex / foreign keys, ALTER TABLE), then the ORM: creates, bulk
// inserts, includes, transactions with increments, array and JSONB columns, and
// dropAllTables (its pg_constraint reads). Prints one line per check. Usage: node sequelize_smoke.js PORT
const { Sequelize, DataTypes, Op } = require('sequelize');
const { Client } = require('pg');

const port = process.argv[2];

async function raw() {
  const c = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  await c.connect();
  const r = await c.query('SELECT $1::int + 1 AS n, $2::text[] AS a, $3::jsonb AS j', [41, ['x', 'y'], { k: 1 }]);
  console.log('pg', r.rows[0].n, JSON.stringify(r.rows[0].a), JSON.stringify(r.rows[0].j));
  const names = await c.query("SELECT array_agg(attname ORDER BY attnum) AS n FROM pg_attribute WHERE attrelid = (SELECT oid FROM pg_class WHERE relname = 'pg_smoke') AND attnum > 0");
  console.log('name[]', typeof names.rows[0].n);
  await c.end();
}

async function orm() {
  const s = new Sequelize(`postgres://postgres@127.0.0.1:${port}/postgres`, { logging: false });
  const User = s.define('User', {
    name: { type: DataTypes.STRING, unique: true, allowNull: false },
    age: DataTypes.INTEGER,
    balance: { type: DataTypes.DECIMAL(10, 2), defaultValue: 0 },
    tags: DataTypes.ARRAY(DataTypes.TEXT),
    meta: DataTypes.JSONB,
  });
  const Post = s.define('Post', { title: DataTypes.STRING, body: DataTypes.TEXT });
  User.hasMany(Post);
  Post.belongsTo(User);
  await s.sync({ force: true });
  await s.sync({ alter: true });
  const u = await User.create({ name: 'ann', age: 30, tags: ['x', 'y'], meta: { a: 1 } });
  await User.bulkCreate([{ name: 'bob', age: 40 }, { name: 'cy', age: 50 }]);
  await Post.create({ title: 't1', UserId: u.id });
  const rows = await User.findAll({ where: { age: { [Op.gte]: 35 } }, order: [['name', 'ASC']] });
  console.log('users', rows.map((r) => r.name).join(','));
  const withPosts = await User.findAll({ include: Post, order: [['id', 'ASC']] });
  console.log('posts', withPosts.map((r) => `${r.name}:${r.Posts.length}`).join(','));
  await s.transaction(async (t) => {
    await User.increment('age', { by: 1, where: { name: 'ann' }, transaction: t });
  });
  const ann = await User.findOne({ where: { name: 'ann' } });
  console.log('ann', ann.age, ann.balance, JSON.stringify(ann.tags), JSON.stringify(ann.meta));
  console.log('contains', await User.count({ where: { tags: { [Op.contains]: ['x'] } } }));
  try {
    await User.create({ name: 'ann', age: 1 });
  } catch (e) {
    console.log('duplicate', e.name, e.original.code);
  }
  await s.getQueryInterface().dropAllTables();
  console.log("dropped", (await s.getQueryInterface().showAllTables()).filter((t) => t === "Users" || t === "Posts").length);
  await s.close();
}

(async () => {
  try {
    const c = new Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    await c.connect();
    await c.query('DROP TABLE IF EXISTS pg_smoke');
    await c.query('CREATE TABLE pg_smoke (id int PRIMARY KEY, label text)');
    await c.end();
    await raw();
    await orm();
  } catch (e) {
    console.log('ERROR', e.message);
    process.exitCode = 1;
  }
})();
